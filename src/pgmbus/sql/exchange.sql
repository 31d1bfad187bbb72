-- Named queries of the mover between databases (pgmbus.exchange.bridge, `pgmbus bridge`).

-- name: durable_commits
-- The guarantee needs commits that survive a crash of the server: never trust a
-- synchronous_commit = off that the role or the database may have set.
SET synchronous_commit = on

-- name: statement_timeout
-- On a destination's session: a receive stuck there (behind a lock) fails its route's transfer
-- instead of holding the mover and every other route.
SELECT set_config('statement_timeout', %(ms)s, false)

-- name: routes
-- Queue routes, then topic routes (kind 'topic'; their names are unique among both).
SELECT r.name, r.link, r.src_queue, r.dst_queue, l.conninfo, 'queue' AS kind
FROM mbus.exchange_route AS r JOIN mbus.exchange_link AS l ON l.name = r.link
UNION ALL
SELECT t.name, t.link, t.src_topic, t.dst_topic, l.conninfo, 'topic'
FROM mbus.exchange_topic_route AS t JOIN mbus.exchange_link AS l ON l.name = t.link
ORDER BY 1

-- name: try_route_lock
SELECT pg_try_advisory_lock(hashtext('mbus.exchange_route'), hashtext(%(route)s))

-- name: take
SELECT mbus.exchange_take(%(route)s, %(amt)s)::text

-- name: receive
SELECT mbus.exchange_receive(%(qname)s, %(messages)s::jsonb)::text

-- name: await_queue
SELECT mbus.await_queue(%(queue)s)

-- name: await_done
SELECT mbus.await_done(%(queue)s)

-- name: take_topic
SELECT mbus.exchange_take_topic(%(route)s, %(amt)s)::text

-- name: receive_topic
SELECT mbus.exchange_receive_topic(%(topic)s, %(events)s::jsonb)::text

-- name: bury_taken
-- The messages just taken from a route's consumer (one transfer's batch) go to the dead-message
-- queue, for that consumer, in the same source transaction: a message the destination keeps
-- refusing stops holding back the route.
-- (a message without headers or properties carries JSON null in the batch: SQL NULL here)
SELECT mbus.post_dmq(%(queue)s, m -> 'data', nullif(m -> 'headers', 'null'),
                     nullif(m -> 'properties', 'null'), m ->> 'iid', %(reason)s, %(consumer)s,
                     %(attempts)s)
FROM jsonb_array_elements(%(messages)s::jsonb) AS m

-- name: bury_topic
-- The next event of a topic route that the destination keeps refusing goes to the dead letters
-- of the route's group, with the reason; the route moves past it.
SELECT mbus.exchange_bury_topic(%(route)s, %(reason)s, %(attempts)s)
