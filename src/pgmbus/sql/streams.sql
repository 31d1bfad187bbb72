-- Queries of the streams engine (pgmbus.streams): thin calls of the mbus SQL API.

-- name: publish
SELECT mbus.publish(%s, %s, %s, %s);

-- name: publish_special
SELECT mbus.publish(%(topic)s, %(payload)s, %(key)s, %(headers)s,
                    subscription_id => %(subscription_id)s::bigint,
                    delayed_until => %(delayed_until)s::timestamptz);

-- name: publish_batch
SELECT mbus.publish_batch(%(topic)s, %(payloads)s::jsonb[], %(keys)s::text[], %(headers)s::jsonb[],
                          subscription_id => %(subscription_id)s::bigint,
                          delayed_until => %(delayed_until)s::timestamptz);

-- name: publish_once
SELECT id, duplicate
FROM mbus.publish_once(%(topic)s, %(idempotency_key)s, %(payloads)s::jsonb[], %(keys)s::text[],
                       %(headers)s::jsonb[], subscription_id => %(subscription_id)s::bigint,
                       delayed_until => %(delayed_until)s::timestamptz);

-- name: release_scheduled
SELECT mbus.release_scheduled(%(max_events)s);

-- name: copy_events
COPY mbus.events (topic, key, payload, headers) FROM STDIN;

-- name: check_log
SELECT mbus._check_log();

-- name: create_group
SELECT mbus.create_group(%(name)s, %(start)s, %(slots)s);

-- name: drop_group
SELECT mbus.drop_group(%(name)s);

-- name: configure_group
SELECT mbus.configure_group(%(name)s, %(topics)s::text[], %(on_busy)s, %(max_lag)s::interval,
                            %(max_attempts)s, %(retry_backoff)s::interval, %(ordered)s);

-- name: read_next
SELECT cursor, id, topic, key, payload, headers, published_at
FROM mbus.read_next(%(group)s, %(max_events)s, %(slot)s);

-- name: read_subscriptions
SELECT cursor, id, topic, key, payload, headers, published_at, subscription_ids
FROM mbus.read_subscriptions(%(group)s, %(max_events)s, %(slot)s);

-- name: commit
SELECT mbus.commit(%(group)s, %(cursor)s);

-- name: seek
SELECT mbus.seek(%(group)s, %(start)s);

-- name: current_cursor
SELECT mbus.current_cursor();

-- name: group_cursor
SELECT mbus.group_cursor(%(group)s, %(slot)s);

-- name: read_between
SELECT id, topic, key, payload, headers, published_at
FROM mbus.read_between(%(from_cursor)s, %(to_cursor)s, %(topics)s::text[], %(slot)s, %(nslots)s);

-- name: retry_event
SELECT mbus.retry_event(%(group)s, %(event_id)s, %(error)s, %(delay)s::interval);

-- name: read_retries
SELECT id, topic, key, payload, headers, published_at, attempts, last_error
FROM mbus.read_retries(%(group)s, %(max_events)s, %(lease)s::interval);

-- name: ack_retry
SELECT mbus.ack_retry(%(group)s, %(event_id)s);

-- name: dead_letters
SELECT event_id, topic, key, payload, headers, published_at, attempts, last_error, dead_at
FROM mbus.stream_dead_letters
WHERE group_name = %(group)s
ORDER BY dead_at, event_id;

-- name: replay_dead_letter
SELECT mbus.replay_dead_letter(%(group)s, %(event_id)s);

-- name: subscribe
SELECT mbus.subscribe(%(group)s, %(condition)s, %(params)s, %(expires_after)s::interval);

-- name: touch_subscription
SELECT mbus.touch_subscription(%(id)s);

-- name: unsubscribe
SELECT mbus.unsubscribe(%(id)s);

-- name: capture_table
SELECT mbus.capture_table(%(tbl)s::regclass, %(topic)s, %(columns)s::text[]);

-- name: stop_capture
SELECT mbus.stop_capture(%(tbl)s::regclass);

-- name: maintain
SELECT mbus.maintain();

-- name: repair_after_restore
SELECT group_name, redelivered FROM mbus.repair_after_restore();

-- name: log_status
SELECT consistent, stored_system_identifier, system_identifier, repaired_at
FROM mbus.log_status();

-- name: group_status
SELECT group_name, slot, state, group_position, committed_at, pending_events,
       oldest_pending_at, retries, dead_letters
FROM mbus.group_status();

-- name: stream_groups
SELECT g.name, g.slots, g.topics, g.on_busy, g.max_lag, g.ordered, g.max_attempts,
       g.retry_backoff, g.state, g.expired_at, g.expired_why, g.created_at
FROM mbus.stream_groups AS g
WHERE %(group)s::text IS NULL OR g.name = %(group)s::text
ORDER BY g.name;

-- name: counters
SELECT name, value FROM mbus.stream_counters ORDER BY name;

-- name: await_events
SELECT mbus.await_events();

-- name: await_events_done
SELECT mbus.await_events_done();

-- name: writers_in_flight
SELECT mbus._writers_in_flight();

-- name: notify
SELECT mbus.notify();

-- name: async_commit
SET synchronous_commit = off;

-- name: subscribe_queue
SELECT mbus.subscribe_queue(%(group)s, %(queue)s, %(condition)s, %(params)s);

-- name: unsubscribe_queue
SELECT mbus.unsubscribe_queue(%(subscription_id)s, %(queue)s);

-- name: move_routed
SELECT mbus.move_routed(%(group)s, %(max_events)s);
