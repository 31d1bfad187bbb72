-- Spark writes through the placement map (issue 17, scale-out): a write to a topic spread over
-- several servers stages each row on the server its key maps to, and the driver's commit
-- settles every server. Its decision is one row here, on the home database, committed before
-- the first server is settled: whoever finds it undone (the next placed commit, or
-- pgmbus.spark.placed.settle) settles the servers still pending, each idempotently through its
-- own ledger (mbus.spark_batches), then deletes the row.

CREATE TABLE mbus.spark_placed_commit (
    sink       text        NOT NULL,
    query_id   text        NOT NULL,
    batch_id   bigint      NOT NULL,
    write_id   text        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('topic', 'queue')),
    parts      jsonb       NOT NULL,
    decided_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sink, query_id, batch_id)
);

COMMENT ON TABLE mbus.spark_placed_commit IS
    'Decided Spark writes through the placement map whose servers are not all settled yet: '
    'parts = [{"dsn", "tokens", "rows"}] per server.';
