-- Function: mbus.spark_claim_batch(p_sink, p_query_id, p_batch_id, p_row_count)
--
-- Purpose:  spark_claim_batch(sink, query_id, batch_id, row_count): record a batch in the ledger.
--           Returns true when the caller's transaction now owns the batch (write its output and commit),
--           false when the batch was committed before (write nothing). Concurrent claimers of one batch
--           wait for each other on the primary key, so at most one commits output.
-- Params:   p_sink text FILL
--           p_query_id text FILL
--           p_batch_id bigint FILL
--           p_row_count bigint DEFAULT 0 FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.spark_claim_batch(
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
