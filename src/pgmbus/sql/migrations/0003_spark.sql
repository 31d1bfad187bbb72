-- spark: what the PySpark data source and the pipeline jobs keep in the database.
--   * mbus.spark_batches: the sink ledger, one row per (sink, query id, batch id) whose output
--     is in the database; written in the same transaction as the output, so a replayed batch
--     finds its row and writes nothing (exactly once per batch);
--   * mbus.spark_staged: rows written by Spark tasks, invisible to consumers until the driver's
--     commit publishes the rows of the successful task attempts (mbus.spark_commit_write);
--   * mbus.spark_archive: which events the archive job has copied to Parquet.

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
CREATE INDEX spark_staged_write ON mbus.spark_staged (write_id, token);

COMMENT ON TABLE mbus.spark_staged IS
    'Rows written by Spark tasks, published by the driver''s commit (or dropped on abort).';

-- spark_claim_batch(sink, query_id, batch_id, row_count): record a batch in the ledger.
-- Returns true when the caller's transaction now owns the batch (write its output and commit),
-- false when the batch was committed before (write nothing). Concurrent claimers of one batch
-- wait for each other on the primary key, so at most one commits output.
CREATE FUNCTION mbus.spark_claim_batch(
    p_sink text, p_query_id text, p_batch_id bigint, p_row_count bigint DEFAULT 0)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_inserted integer;
BEGIN
    INSERT INTO mbus.spark_batches (sink, query_id, batch_id, row_count)
    VALUES (p_sink, p_query_id, p_batch_id, coalesce(p_row_count, 0))
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted = 1;
END;
$$;

-- spark_discard_write(write_id): drop every staged row of a write (all task attempts).
CREATE FUNCTION mbus.spark_discard_write(p_write_id text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_n bigint;
BEGIN
    DELETE FROM mbus.spark_staged WHERE write_id = p_write_id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;

-- spark_commit_write(sink, query_id, batch_id, write_id, tokens, expected, kind):
-- the driver's commit of one Spark write (a batch write or one micro-batch). In one transaction:
-- claim (sink, query_id, batch_id) in the ledger; publish the staged rows of the successful task
-- attempts (tokens) as stream events (kind 'topic': target is the topic) or queue messages
-- (kind 'queue': target is the queue); drop every staged row of the write, including those of
-- failed or duplicate attempts. Returns the number of rows published, or -1 when the batch was
-- committed before (a replay after a driver crash): then nothing is published again.
-- Raises MB008 when fewer rows are staged than the tasks reported (lost by a server crash).
CREATE FUNCTION mbus.spark_commit_write(
    p_sink text, p_query_id text, p_batch_id bigint, p_write_id text,
    p_tokens text[], p_expected bigint, p_kind text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_found bigint;
    r record;
BEGIN
    IF p_kind NOT IN ('topic', 'queue') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown write kind %L (topic or queue)', p_kind);
    END IF;
    IF NOT mbus.spark_claim_batch(p_sink, p_query_id, p_batch_id, p_expected) THEN
        PERFORM mbus.spark_discard_write(p_write_id);
        RETURN -1;
    END IF;
    SELECT count(*) INTO v_found
    FROM mbus.spark_staged WHERE write_id = p_write_id AND token = ANY (p_tokens);
    IF v_found <> p_expected THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('write %s: %s staged rows found, the tasks reported %s',
                             p_write_id, v_found, p_expected),
            HINT = 'staged rows were lost (server crash?); Spark must re-run the batch';
    END IF;
    FOR r IN
        SELECT s.target, s.key, s.payload, s.headers
        FROM mbus.spark_staged AS s
        WHERE s.write_id = p_write_id AND s.token = ANY (p_tokens)
        ORDER BY s.token, s.seq
    LOOP
        IF p_kind = 'topic' THEN
            PERFORM mbus.publish(r.target, r.payload, r.key, r.headers);
        ELSE
            PERFORM mbus.post(r.target, r.payload);
        END IF;
    END LOOP;
    PERFORM mbus.spark_discard_write(p_write_id);
    RETURN v_found;
END;
$$;
