-- Function: mbus._spark_settle(p_write_id, p_keep)
--
-- Purpose:  End the pending state of a Spark write to topics (mbus.spark_pending): delete from
--           mbus.events the events of every task attempt of the write not in p_keep (failed
--           or duplicate attempts, or all of them when p_keep is NULL: an abort, a replay, an
--           abandoned write), then delete all the write's pending rows. Both in the caller's
--           transaction, so readers (whose snapshots hide a pending attempt's transaction, see
--           mbus._snapshot_now) see the kept attempts' events appear and the others never.
--           Each attempt's transaction wrote only its own events, so its txid names exactly
--           them (index events_txid_id).
-- Params:   p_write_id  the write's id (text)
--           p_keep      the tokens whose events are published (text[]; NULL = none)
-- Returns:  bigint: the number of events deleted
-- Locks:    row locks of the events and mbus.spark_pending rows it deletes, held to commit;
--           callers hold the write's advisory lock (mbus._spark_write_lock) exclusively
-- Calls:    none
-- Tables:   mbus.events, mbus.spark_pending
CREATE OR REPLACE FUNCTION mbus._spark_settle(p_write_id text, p_keep text[])
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_n bigint;
BEGIN
    DELETE FROM mbus.events AS e
    WHERE e.txid = ANY (ARRAY(
        SELECT p.txid FROM mbus.spark_pending AS p
        WHERE p.write_id = p_write_id
          AND (p_keep IS NULL OR p.token <> ALL (p_keep))));
    GET DIAGNOSTICS v_n = ROW_COUNT;
    DELETE FROM mbus.spark_pending AS p WHERE p.write_id = p_write_id;
    RETURN v_n;
END;
$$;
