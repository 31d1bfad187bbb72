-- spark (issue 14): a Spark write publishes in parallel, its commit is O(1) in its rows.
--   * mbus.spark_pending: one row per task attempt of a Spark write to topics that wrote its
--     rows straight into mbus.events in its own transaction (txid = that transaction). While
--     the row exists, every snapshot a reader takes (mbus._snapshot_now) counts that
--     transaction as still in progress, so its events are invisible to every reader; the
--     driver's commit deletes the write's rows here (the flip: one small DELETE, O(tasks)), and
--     the next snapshot sees the events, in the same batch for every reader. Rows of attempts
--     Spark did not report, of an aborted write and of a write whose driver died are deleted
--     from mbus.events before their pending row goes, so readers never see them.
--     Logged (unlike mbus.spark_staged): after a server crash the events it hides are still
--     there, and so must it be.

CREATE TABLE mbus.spark_pending (
    write_id  text        NOT NULL,
    token     text        NOT NULL,
    txid      xid8        NOT NULL,
    row_count bigint      NOT NULL CHECK (row_count >= 0),
    staged_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (write_id, token)
);

COMMENT ON TABLE mbus.spark_pending IS
    'Spark task attempts whose events (txid) readers must not see until the driver commits.';
