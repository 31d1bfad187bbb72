-- Function: mbus.spark_mark_pending(p_write_id, p_token, p_rows)
--
-- Purpose:  The last statement of a Spark task's transaction that copied its rows straight into
--           mbus.events (a write to topics): records the task attempt and this transaction's id
--           in mbus.spark_pending, so that from the moment the transaction commits, every
--           reader's snapshot (mbus._snapshot_now) counts it as in progress and its events stay
--           invisible until the driver's commit (mbus.spark_commit_write) deletes this row.
--           Inserted in the same transaction as the events: readers see both or neither.
-- Params:   p_write_id  the write's id (text)
--           p_token     the task attempt's token (text, unique per attempt)
--           p_rows      the number of events the attempt copied (bigint >= 0)
-- Returns:  void; MB006 for a NULL or empty write id or token, or a NULL or negative count
-- Locks:    inserts the attempt's mbus.spark_pending row (held to the task's commit)
-- Calls:    none
-- Tables:   mbus.spark_pending
CREATE OR REPLACE FUNCTION mbus.spark_mark_pending(p_write_id text, p_token text, p_rows bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    -- the table's constraints as a typed error (they raised 23502/23514 naming a constraint)
    IF coalesce(p_write_id, '') = '' OR coalesce(p_token, '') = ''
       OR p_rows IS NULL OR p_rows < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'write_id and token must be non-empty, rows 0 or more';
    END IF;
    INSERT INTO mbus.spark_pending (write_id, token, txid, row_count)
    VALUES (p_write_id, p_token, pg_current_xact_id(), p_rows);
END;
$$;
