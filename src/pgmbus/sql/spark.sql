-- Named queries of the PySpark data source (pgmbus.spark).

-- name: begin_stage
SELECT mbus.spark_begin_stage(%(write_id)s)

-- name: lock_stage
SELECT mbus.spark_lock_stage(%(write_id)s)

-- name: stage_copy
COPY mbus.spark_staged (write_id, token, seq, target, key, payload, headers)
FROM STDIN (FORMAT csv)

-- name: events_copy
-- A task's rows of a write to topics, straight into the log (hidden from readers until the
-- driver's commit: mbus.spark_mark_pending in the same transaction).
COPY mbus.events (topic, key, payload, headers) FROM STDIN (FORMAT csv)

-- name: check_log
SELECT mbus._check_log()

-- name: mark_pending
SELECT mbus.spark_mark_pending(%(write_id)s, %(token)s, %(rows)s)

-- name: commit_write
SELECT mbus.spark_commit_write(%(sink)s, %(query_id)s, %(batch_id)s, %(write_id)s,
                               %(tokens)s, %(expected)s, %(kind)s)

-- name: discard_write
SELECT mbus.spark_discard_write(%(write_id)s)

-- name: claim_batch
SELECT mbus.spark_claim_batch(%(sink)s, %(query_id)s, %(batch_id)s, %(row_count)s)

-- Templates of the table sink (identifiers composed with psycopg.sql).

-- name: sink_copy
COPY {table} ({columns}) FROM STDIN (FORMAT csv)

-- name: sink_stage_create
CREATE TEMP TABLE {stage} ON COMMIT DROP AS SELECT {columns} FROM {table} WITH NO DATA

-- name: sink_upsert
INSERT INTO {table} ({columns}) SELECT {columns} FROM {stage}
ON CONFLICT ({keys}) DO UPDATE SET {updates}

-- name: sink_insert_ignore
INSERT INTO {table} ({columns}) SELECT {columns} FROM {stage}
ON CONFLICT ({keys}) DO NOTHING

-- name: sink_stage_drop
DROP TABLE IF EXISTS {stage}

-- Reading the log (the cursor API of the streams engine, and spark_read/spark_next_cursor).

-- name: current_cursor
SELECT mbus.current_cursor()

-- name: release_scheduled
SELECT mbus.release_scheduled()

-- name: beginning_cursor
SELECT '1:1:'::text

-- name: create_group
SELECT mbus.create_group(%(group)s, %(start)s)

-- name: group_slots
SELECT g.slots FROM mbus.stream_groups AS g WHERE g.name = %(group)s

-- name: group_slot_cursor
SELECT mbus.group_cursor(%(group)s, %(slot)s)

-- name: group_cursor
SELECT mbus.group_cursor(%(group)s)

-- name: commit_group
SELECT mbus.commit(%(group)s, %(cursor)s)

-- name: next_cursor
SELECT mbus.spark_next_cursor(%(from_cursor)s, %(to_cursor)s, %(max_events)s,
                              %(topics)s::text[], %(before)s::timestamptz)

-- name: id_bounds
SELECT min(e.id), max(e.id) FROM mbus.events AS e

-- name: read_range
-- A template: the reader fills in literals (psycopg.sql.Literal), so that the planner folds the
-- cursor functions into constants and each part is one index range scan. Run through ADBC,
-- which wraps it in COPY (FORMAT binary).
SELECT e.id, e.topic, e.key, e.payload::text AS payload, e.headers::text AS headers,
       e.published_at
FROM mbus.spark_read({from_cursor}, {to_cursor}, {topics}::text[], {slot}, {nslots},
                     {keys}::text[], {id_min}::int8, {id_max}::int8, {time_ge}::timestamptz,
                     {time_gt}::timestamptz, {time_le}::timestamptz,
                     {time_lt}::timestamptz, {subscription}::int8) AS e
WHERE {key_nslots}::integer IS NULL
   OR mbus.key_slot(e.key, e.id, {key_nslots}::integer) = {key_slot}::integer

-- name: capture_topic
SELECT c.topic FROM mbus.captures AS c WHERE c.tbl = %(table)s::regclass

-- name: capture_table
SELECT mbus.capture_table(%(table)s::regclass, %(topic)s)

-- Writes through the placement map (pgmbus.spark.placed), on the home database.

-- name: placed_decide
INSERT INTO mbus.spark_placed_commit (sink, query_id, batch_id, write_id, kind, parts)
VALUES (%(sink)s, %(query_id)s, %(batch_id)s, %(write_id)s, %(kind)s, %(parts)s)
ON CONFLICT (sink, query_id, batch_id) DO NOTHING

-- name: placed_decision
SELECT write_id, kind, parts FROM mbus.spark_placed_commit
WHERE sink = %(sink)s AND query_id = %(query_id)s AND batch_id = %(batch_id)s

-- name: placed_undone
SELECT sink, query_id, batch_id, write_id, kind, parts FROM mbus.spark_placed_commit
ORDER BY decided_at

-- name: placed_done
DELETE FROM mbus.spark_placed_commit
WHERE sink = %(sink)s AND query_id = %(query_id)s AND batch_id = %(batch_id)s
