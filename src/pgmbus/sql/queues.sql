-- Named queries of the queues client (pgmbus.queues). Placeholders in braces ({fn}) are
-- identifiers of generated per-queue functions, filled in with psycopg.sql.Identifier.

-- name: create_queue
SELECT mbus.create_queue(%(queue)s, %(ncons)s, %(roles)s);

-- name: drop_queue
SELECT mbus.drop_queue(%(queue)s);

-- name: create_consumer
SELECT mbus.create_consumer(%(queue)s, %(consumer)s, %(selector)s, %(noindex)s);

-- name: drop_consumer
SELECT mbus.drop_consumer(%(queue)s, %(consumer)s);

-- name: create_trigger
SELECT mbus.create_trigger(%(src)s, %(dst)s, %(selector)s);

-- name: drop_trigger
SELECT mbus.drop_trigger(%(src)s, %(dst)s);

-- name: require_consumer
SELECT mbus.require_consumer(%(queue)s, %(consumer)s);

-- name: require_queue
SELECT mbus.require_queue(%(queue)s);

-- name: list_queues
SELECT qname, ncons, roles_security, created_at, consumers, triggers_to
FROM mbus.queues ORDER BY qname;

-- name: stats
SELECT qname, cname, depth, ready, delayed, leased, expired, oldest_age, dmq, selector_errors,
       posted, consumed, paused, dmq_unreported
FROM mbus.queue_stats(%(queue)s);

-- name: counters
SELECT qname, cname, posted, consumed FROM mbus.queue_counters(%(queue)s);

-- name: pause
SELECT mbus.pause_queue(%(queue)s, %(consumer)s);

-- name: resume
SELECT mbus.resume_queue(%(queue)s, %(consumer)s);

-- name: purge
SELECT mbus.purge_queue(%(queue)s, %(consumer)s);

-- name: rotate_queue
SELECT mbus.rotate_queue(%(queue)s, %(tries)s);

-- name: upkeep_queue
SELECT mbus.upkeep_queue(%(queue)s, %(tries)s);

-- name: get_iid
SELECT mbus.get_iid(%(queue)s);

-- name: generated_name
-- The name of a function generated for a queue or consumer, as mbus.generated_names lists it.
SELECT mbus.generated_name('function', %(what)s, %(queue)s, %(consumer)s);

-- name: post
SELECT mbus.{fn}(%(data)s, %(headers)s, %(properties)s, %(delayed_until)s, %(expires)s, %(iid)s,
                 dedupe_key => %(dedupe_key)s::text, consume_after => %(consume_after)s::text[],
                 priority => %(priority)s::integer);

-- name: post_batch
SELECT iid FROM mbus.{fn}(%(data)s, %(headers)s, %(properties)s, %(delayed_until)s, %(expires)s,
                          priority => %(priority)s::integer[])
    AS p(iid);

-- name: consumen
-- The claim runs once per row of mbus.consumer for the pair the bus means (the argument that
-- refers to it orders the join), i.e. only while that consumer exists: a generated name freed
-- by a dropped consumer and taken by another queue's (`a` + `b_by_c` vs `a_by_b` + `c`) then
-- claims nothing for the wrong pair. The LEFT JOIN answers one row of NULLs when the pair
-- exists and nothing was claimed, and no row at all when it is gone (the bus then says so),
-- so an empty claim costs no second round trip.
SELECT g.* FROM mbus.consumer AS k
LEFT JOIN LATERAL mbus.{fn}(%(amount)s + 0 * k.cid, %(now)s) AS g ON true
WHERE k.qname = %(queue)s AND k.cname = %(consumer)s;

-- name: lease
-- (the guard of consumen)
SELECT g.* FROM mbus.consumer AS k
LEFT JOIN LATERAL mbus.{fn}(%(amount)s + 0 * k.cid, %(lease)s, %(max_attempts)s, %(now)s) AS g
ON true
WHERE k.qname = %(queue)s AND k.cname = %(consumer)s;

-- name: ack
SELECT mbus.{fn}(%(token)s, %(now)s);

-- name: nack
SELECT mbus.{fn}(%(token)s, %(delay)s, %(now)s);

-- name: extend
SELECT mbus.{fn}(%(token)s, %(lease)s, %(now)s);

-- name: bury
SELECT mbus.{fn}(%(token)s, %(reason)s, %(now)s);

-- name: take
SELECT * FROM mbus.take(%(iid)s);

-- name: take_from
SELECT * FROM mbus.take_from(%(queue)s, %(consumer)s, %(iid)s);

-- name: peek
SELECT mbus.peek(%(queue)s, %(iid)s);

-- name: clear_queue
SELECT mbus.clear_queue(%(queue)s, %(now)s);

-- name: dmq_list
SELECT dmq_id, qname, cname, iid, data, headers, properties, attempts, reason, died_at, priority,
       unreported
FROM mbus.dmq
WHERE %(queue)s::text IS NULL OR qname = %(queue)s::text
ORDER BY dmq_id
LIMIT %(limit)s;

-- name: dmq_replay
SELECT mbus.dmq_replay(%(dmq_id)s, %(queue)s);

-- name: dmq_delete
SELECT mbus.dmq_delete(%(dmq_id)s);

-- name: post_dmq
SELECT mbus.post_dmq(%(queue)s, %(data)s, %(headers)s, %(properties)s, %(iid)s, %(reason)s,
                     %(consumer)s, %(attempts)s);

-- name: await_queue
SELECT mbus.await_queue(%(queue)s);

-- name: await_done
SELECT mbus.await_done(%(queue)s);

-- Temporary queues and consumers, request-response.

-- name: create_temporary_queue
SELECT mbus.create_temporary_queue();

-- name: create_temporary_consumer
SELECT mbus.create_temporary_consumer(%(queue)s, %(selector)s);

-- name: clear_tempq
SELECT mbus.clear_tempq();

-- name: queue_exists
SELECT EXISTS (SELECT 1 FROM mbus.queue WHERE qname = %(queue)s);

-- Sagas (pgmbus.queues.saga).

-- name: saga_start
SELECT mbus.saga_start(%(name)s, %(steps)s, %(data)s);

-- name: saga_rollback
SELECT mbus.saga_rollback(%(saga_id)s, %(reason)s);

-- name: saga_step_done
SELECT mbus.saga_step_done(%(saga_id)s, %(step)s, %(compensation)s);

-- name: saga_pump
SELECT mbus.saga_pump(%(amount)s);

-- name: saga_status
SELECT saga_id, name, state, reason, steps FROM mbus.sagas WHERE saga_id = %(saga_id)s;

-- name: consume_one
SELECT * FROM mbus.consume(%(queue)s, %(consumer)s);

-- name: waiting_list
SELECT qname, iid, pending, since, waits_for FROM mbus.waiting ORDER BY since, qname, id
LIMIT %(limit)s;

-- name: create_view
SELECT mbus.create_view(%(queue)s, %(view)s);

-- name: saga_list
SELECT saga_id, name, state, reason, steps FROM mbus.sagas
WHERE %(state)s::text IS NULL OR state = %(state)s::text
ORDER BY saga_id DESC LIMIT %(limit)s;

-- name: ack_many
-- The worker's acks of one loop turn in one statement: all or none (a lease no longer held
-- raises MB007 and rolls the statement back; the caller then acks one by one). The tokens
-- go in binary: psycopg quotes each element of a text array with a regular expression.
SELECT mbus.{fn}(t, %(now)s) FROM unnest(%(tokens)b::uuid[]) AS t;

-- name: extend_many
-- The worker's lease heartbeat for every message in hand, all or none as ack_many.
SELECT mbus.{fn}(t, %(lease)s, %(now)s) FROM unnest(%(tokens)b::uuid[]) AS t;
