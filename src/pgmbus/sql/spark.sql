-- Named queries of the PySpark data source (pgmbus.spark).

-- name: stage_copy
COPY mbus.spark_staged (write_id, token, seq, target, key, payload, headers)
FROM STDIN (FORMAT csv)

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
