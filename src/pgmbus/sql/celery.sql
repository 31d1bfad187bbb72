-- Named queries of the Celery integration (pgmbus.contrib): the Kombu transport's batched
-- acks and the exchange bindings its processes share (mbus.kombu_bindings).

-- name: ack_many
-- Acks the leases of one queue in one statement (one round trip, one commit). A lease no
-- longer held raises MB007 and the statement acks none of them: the caller then acks one by
-- one, to learn which lease was lost.
SELECT mbus.ack(%(queue)s, t) FROM unnest(%(tokens)s::uuid[]) AS t;

-- name: bind
INSERT INTO mbus.kombu_bindings (exchange, queue, routing_key, pattern, message_ttl)
VALUES (%(exchange)s, %(queue)s, %(routing_key)s, %(pattern)s, %(message_ttl)s)
ON CONFLICT (exchange, queue, routing_key)
DO UPDATE SET pattern = excluded.pattern, message_ttl = excluded.message_ttl;

-- name: unbind
DELETE FROM mbus.kombu_bindings
WHERE exchange = %(exchange)s AND queue = %(queue)s AND routing_key = %(routing_key)s;

-- name: unbind_queue
DELETE FROM mbus.kombu_bindings WHERE queue = %(queue)s;

-- name: bindings
SELECT routing_key, pattern, queue, message_ttl FROM mbus.kombu_bindings
WHERE exchange = %(exchange)s
ORDER BY queue, routing_key;

-- name: extend_many
-- Extends the leases of one queue in one statement (the lease keeper's tick). A lease no longer
-- held raises MB007 and the statement extends none of them: the caller then extends one by
-- one, to learn which lease was lost.
SELECT mbus.extend(%(queue)s, t, %(lease)s) FROM unnest(%(tokens)s::uuid[]) AS t;
