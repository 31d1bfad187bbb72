-- spark: what the PySpark data source and the pipeline jobs keep in the database.
--   * mbus.spark_batches: the sink ledger, one row per (sink, query id, batch id) whose output
--     is in the database; written in the same transaction as the output, so a replayed batch
--     finds its row and writes nothing (exactly once per batch);
--   * mbus.spark_staged: rows written by Spark tasks, invisible to consumers until the driver's
--     commit publishes the rows of the successful task attempts (mbus.spark_commit_write);
--   * mbus.stats_user_edits, mbus.stats_object_activity: the tables of the stats job.

CREATE TABLE mbus.spark_batches (
    sink         text        NOT NULL CHECK (sink <> ''),
    query_id     text        NOT NULL CHECK (query_id <> ''),
    batch_id     bigint      NOT NULL CHECK (batch_id >= 0),
    row_count    bigint      NOT NULL DEFAULT 0,
    committed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sink, query_id, batch_id)
);

COMMENT ON TABLE mbus.spark_batches IS
    'Sink ledger: the Spark micro-batches whose output is committed (exactly once per batch).';

-- Unlogged: staged rows are transient. A crash of the server loses them, and the commit then
-- finds fewer rows than the tasks reported and refuses (Spark re-runs the batch).
CREATE UNLOGGED TABLE mbus.spark_staged (
    write_id   text        NOT NULL,
    token      text        NOT NULL,
    seq        integer     NOT NULL,
    target     text,
    key        text,
    payload    jsonb       NOT NULL,
    headers    jsonb,
    staged_at  timestamptz NOT NULL DEFAULT now()
);

-- Staged rows in publishing order: the commit reads each task's rows from this index in
-- order instead of sorting the whole write; it also serves the lookups by write_id.
CREATE INDEX spark_staged_order ON mbus.spark_staged (write_id, token, seq);

COMMENT ON TABLE mbus.spark_staged IS
    'Rows written by Spark tasks, published by the driver''s commit (or dropped on abort).';

-- The statistics the shipped `stats` job keeps up to date (pgmbus.spark.jobs.stats): edits
-- per user and per object per time window, from a captured table of edits.
CREATE TABLE mbus.stats_user_edits (
    user_name    text        PRIMARY KEY,
    edits        bigint      NOT NULL CHECK (edits >= 0),
    last_edit_at timestamptz NOT NULL
);

CREATE TABLE mbus.stats_object_activity (
    object_id    text        NOT NULL,
    window_start timestamptz NOT NULL,
    window_end   timestamptz NOT NULL,
    edits        bigint      NOT NULL CHECK (edits >= 0),
    PRIMARY KEY (object_id, window_start),
    CHECK (window_end > window_start)
);

COMMENT ON TABLE mbus.stats_user_edits IS 'Edits per user (pgmbus pipeline stats).';

COMMENT ON TABLE mbus.stats_object_activity IS
    'Edits per object per time window (pgmbus pipeline stats).';

-- One row per write with staged rows: what the cleanup scans instead of the staged rows.
-- Unlogged like mbus.spark_staged (a server crash empties both).
CREATE UNLOGGED TABLE mbus.spark_writes (
    write_id       text        PRIMARY KEY,
    first_staged_at timestamptz NOT NULL DEFAULT now(),
    last_staged_at  timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mbus.spark_writes IS
    'Spark writes with staged rows (mbus.spark_staged) and when a task last began staging.';

INSERT INTO mbus.settings (key, value, description) VALUES
    ('spark.staged_ttl', '"1 day"',
     'staged rows of a Spark write nobody staged into for this long are dropped (its driver '
     'died before the commit); a commit after that refuses with MB008 and Spark re-runs it');
