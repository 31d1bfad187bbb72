-- Named queries of the placement map and queue moves (pgmbus.scaleout, `pgmbus placement`).

-- name: durable_commits
-- A move's guarantee needs commits that survive a crash of the server.
SET synchronous_commit = on

-- name: servers
SELECT name, conninfo FROM mbus.placement_server ORDER BY name

-- name: placements
SELECT kind, name, servers, moving_to, move_id, scheme, previous FROM mbus.placement
ORDER BY kind, name

-- name: add_server
SELECT mbus.add_server(%(name)s, %(conninfo)s)

-- name: drop_server
SELECT mbus.drop_server(%(name)s)

-- name: place
SELECT mbus.place(%(kind)s, %(name)s, %(servers)s::text[])

-- name: unplace
SELECT mbus.unplace(%(kind)s, %(name)s)

-- name: move_lock
-- One move of a queue at a time: the session lock a mover holds until it ends (or dies).
SELECT pg_advisory_lock(hashtext('mbus.move'), hashtext(%(queue)s))

-- name: begin_move
SELECT mbus.begin_move(%(queue)s, %(server)s)

-- name: finish_move
SELECT mbus.finish_move(%(queue)s)

-- name: consumers
SELECT cname, selector FROM mbus.consumer WHERE qname = %(queue)s ORDER BY cname

-- name: queue_exists
SELECT EXISTS (SELECT 1 FROM mbus.queue WHERE qname = %(queue)s)

-- name: create_queue
SELECT mbus.create_queue(%(queue)s, 1)

-- name: create_consumer
SELECT mbus.create_consumer(%(queue)s, %(consumer)s, %(selector)s)

-- name: drop_consumer
SELECT mbus.drop_consumer(%(queue)s, %(consumer)s)

-- name: drop_queue
-- Undo of a move that failed before it began: the queue the move made on the target.
SELECT mbus.drop_queue(%(queue)s)

-- name: depth
SELECT coalesce(sum(depth), 0) FROM mbus.queue_stats(%(queue)s)

-- name: take
SELECT mbus.move_take(%(queue)s, %(consumer)s, %(amt)s)::text

-- name: receive
SELECT mbus.move_receive(%(move_id)s, %(queue)s, %(messages)s::jsonb)::text

-- name: fence
-- The old server refuses posts to the queue from now on (MB010, naming the new server).
SELECT mbus.move_fence(%(queue)s, %(server)s)

-- name: unfence
SELECT mbus.move_unfence(%(queue)s)

-- name: forget_move
DELETE FROM mbus.move_received WHERE move_id = %(move_id)s

-- name: change_topic_servers
SELECT mbus.change_topic_servers(%(topic)s, %(servers)s::text[])

-- name: finish_topic_change
SELECT mbus.finish_topic_change(%(topic)s)

-- name: current_cursor
SELECT mbus.current_cursor()

-- name: groups_behind
-- The groups (and slots) of this server still to read events published before the fence.
SELECT g.group_name, g.slot FROM mbus.group_status() AS g
WHERE EXISTS (SELECT 1 FROM mbus.read_between(g.group_position, %(fence)s) LIMIT 1)
ORDER BY 1, 2
