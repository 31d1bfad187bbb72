-- Function: mbus.dedupe_clean(p_qname)
--
-- Purpose:  Drop the dedupe rows whose message is no longer pending (every delivery consumed,
--           taken, purged, expired or buried): such a row no longer blocks a post, it only takes
--           space. A row is taken under its key's lock (mbus.dedupe_lock's advisory lock, tried
--           without waiting), so a post of that key in progress keeps it. mbus.maintain (and so
--           `pgmbus maintain`) runs it for every queue.
-- Params:   p_qname  one queue (text; NULL = every queue)
-- Returns:  bigint: rows dropped
-- Locks:    pg_try_advisory_xact_lock of each dropped row's key; row locks of the rows it deletes
-- Calls:    mbus.generated_name
-- Tables:   mbus.queue_dedupe
CREATE OR REPLACE FUNCTION mbus.dedupe_clean(p_qname text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q     text;
    v_n     bigint;
    v_total bigint := 0;
BEGIN
    FOR v_q IN SELECT DISTINCT d.qname FROM mbus.queue_dedupe AS d
               WHERE p_qname IS NULL OR d.qname = p_qname ORDER BY 1 LOOP
        EXECUTE format($t$
            DELETE FROM mbus.queue_dedupe AS d
            WHERE d.qname = $1
              AND NOT EXISTS (SELECT 1 FROM mbus.%I AS q WHERE q.id = d.id)
              AND pg_try_advisory_xact_lock(hashtextextended(d.qname || ' dedupe ' || d.dkey, 0))$t$,
            mbus.generated_name('relation', 'table', v_q))
        USING v_q;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_total := v_total + v_n;
    END LOOP;
    RETURN v_total;
END;
$$;
