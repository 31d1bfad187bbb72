-- Queries of a worker that follows the placement map (pgmbus.workers.placed).

-- name: group_topics
-- The topics a stream group reads on one server (NULL: every topic); no row: no such group.
SELECT topics FROM mbus.stream_groups WHERE name = %(group)s AND state = 'active'
