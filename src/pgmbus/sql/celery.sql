-- Named queries of the Celery integration (pgmbus.contrib): the Kombu transport's batched
-- acks, the exchange bindings its processes share (mbus.kombu_bindings) and its result
-- backend (mbus.celery_results).

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

-- Celery's result backend (pgmbus.contrib.celery_results): the key-value store of
-- mbus.celery_results. Rows past their expires_at are not read.

-- name: result_get
SELECT key, value FROM mbus.celery_results
WHERE key = ANY(%(keys)s::text[]) AND (expires_at IS NULL OR expires_at > now());

-- name: result_set
-- Stores the value and tells every session waiting for results (LISTEN) which key changed.
WITH stored AS (
    INSERT INTO mbus.celery_results AS r (key, value, expires_at)
    VALUES (%(key)s, %(value)s,
            now() + make_interval(secs => %(expires)s::double precision))
    ON CONFLICT (key) DO UPDATE
    SET value = excluded.value, expires_at = excluded.expires_at, stored_at = now()
    RETURNING r.key
)
SELECT pg_notify(%(channel)s, key) FROM stored;

-- name: result_listen
-- The channel result_set notifies (pgmbus.contrib.celery_results.CHANNEL).
LISTEN pgmbus_celery_results;

-- name: result_delete
DELETE FROM mbus.celery_results WHERE key = %(key)s;

-- name: result_incr
-- A chord's counter: one more finished part. An expired counter starts again from 1.
INSERT INTO mbus.celery_results AS r (key, value, expires_at)
VALUES (%(key)s, convert_to('1', 'UTF8'),
        now() + make_interval(secs => %(expires)s::double precision))
ON CONFLICT (key) DO UPDATE
SET value = convert_to((CASE WHEN r.expires_at IS NOT NULL AND r.expires_at <= now() THEN 0
                             ELSE convert_from(r.value, 'UTF8')::bigint END + 1)::text, 'UTF8'),
    stored_at = now()
RETURNING convert_from(r.value, 'UTF8')::bigint;

-- name: result_expire
UPDATE mbus.celery_results
SET expires_at = now() + make_interval(secs => %(expires)s::double precision)
WHERE key = %(key)s;

-- name: result_cleanup
DELETE FROM mbus.celery_results WHERE expires_at <= now();
