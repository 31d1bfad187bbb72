-- Named queries of the mover between databases (pgmbus.exchange.bridge, `pgmbus bridge`).

-- name: durable_commits
-- The guarantee needs commits that survive a crash of the server: never trust a
-- synchronous_commit = off that the role or the database may have set.
SET synchronous_commit = on

-- name: routes
SELECT r.name, r.link, r.src_queue, r.dst_queue, l.conninfo
FROM mbus.exchange_route AS r JOIN mbus.exchange_link AS l ON l.name = r.link
ORDER BY r.name

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
