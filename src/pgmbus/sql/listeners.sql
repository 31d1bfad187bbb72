-- Queries of the live listeners of `pgmbus serve` (pgmbus.http.listeners): Server-Sent Events
-- for subscriptions, read without any group's lock or cursor.

-- name: release_scheduled
SELECT mbus.release_scheduled();

-- name: current_cursor
SELECT mbus.current_cursor();

-- name: next_cursor
SELECT mbus.spark_next_cursor(%(from_cursor)s, %(to_cursor)s, %(max_events)s, NULL, NULL);

-- name: read
SELECT id, topic, key, payload, headers, published_at, subscription_ids
FROM mbus.read_listeners(%(from_cursor)s, %(to_cursor)s, %(subscriptions)s::bigint[]);

-- name: touch
UPDATE mbus.subscriptions AS s SET last_active_at = now()
WHERE s.id = ANY (%(ids)s::bigint[])
RETURNING s.id;

-- name: subscription
SELECT s.id, s.group_name, s.condition, s.params, s.expires_after
FROM mbus.subscriptions AS s WHERE s.id = %(id)s;

-- name: subscribe
-- (HTTP keys: the condition must be in the restricted grammar, whatever the group has)
SELECT mbus.subscribe_restricted(%(group)s, %(condition)s, %(params)s,
                                 %(expires_after)s::interval);

-- name: listen
-- LISTEN and register as a waiting reader (publishers notify only while one is registered);
-- the hub stays registered for its connection's life
SELECT mbus.await_events();
