-- Function: mbus.spark_claim_batch(p_sink, p_query_id, p_batch_id, p_row_count)
--
-- Purpose:  Record a batch in the sink ledger (mbus.spark_batches) in the caller's transaction,
--           which also writes the batch's output: exactly once per batch. True: the caller now
--           owns the batch (write its output and commit). False: the batch was committed
--           before, e.g. replayed after the driver died between the database commit and Spark's
--           checkpoint (write nothing). Concurrent claimers of one batch wait for each other on
--           the primary key, so at most one commits output.
-- Params:   p_sink       the sink's name (text)
--           p_query_id   the streaming query's id (text)
--           p_batch_id   the micro-batch id (bigint >= 0)
--           p_row_count  the batch's row count, kept for inspection (default 0)
-- Returns:  boolean: true when claimed now, false when committed before; MB006 for an
--           empty or NULL sink or query id, or a NULL or negative batch id
-- Locks:    inserts the ledger row (held to commit); waits for a concurrent transaction that
--           claims the same batch (ON CONFLICT on the primary key)
-- Calls:    none
-- Tables:   mbus.spark_batches
CREATE OR REPLACE FUNCTION mbus.spark_claim_batch(
    p_sink text, p_query_id text, p_batch_id bigint, p_row_count bigint DEFAULT 0)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_inserted integer;
BEGIN
    -- the ledger's constraints as typed errors (they raised 23502/23514 naming a constraint)
    IF p_sink IS NULL OR p_sink = '' OR p_query_id IS NULL OR p_query_id = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'sink and query_id must be non-empty text';
    END IF;
    IF p_batch_id IS NULL OR p_batch_id < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('batch_id must be 0 or more, not %s',
                             coalesce(p_batch_id::text, 'NULL'));
    END IF;
    INSERT INTO mbus.spark_batches (sink, query_id, batch_id, row_count)
    VALUES (p_sink, p_query_id, p_batch_id, coalesce(p_row_count, 0))
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted = 1;
END;
$$;
