-- Function: mbus.expire_client_iids(p_qname, p_now, p_limit)
--
-- Purpose:  Forget client-given iids posted longer ago than queues.iid_window (mbus.iid_window):
--           delete their rows of mbus.client_iids (post_<q> already treats such a row as absent;
--           this only gives the space back). Rows another transaction holds are skipped.
-- Params:   p_qname  only this queue's rows (NULL = every queue)
--           p_now    the clock (NULL = now()); tests move it
--           p_limit  at most this many rows (NULL = all)
-- Returns:  bigint: the rows deleted
-- Locks:    row locks of the rows it deletes (FOR UPDATE SKIP LOCKED: never waits)
-- Calls:    mbus.given_clock, mbus.iid_window
-- Tables:   mbus.client_iids
CREATE OR REPLACE FUNCTION mbus.expire_client_iids(p_qname text DEFAULT NULL,
                                                   p_now timestamptz DEFAULT NULL,
                                                   p_limit integer DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_before timestamptz := coalesce(mbus.given_clock(p_now), now()) - mbus.iid_window();
    v_count  bigint;
BEGIN
    DELETE FROM mbus.client_iids AS ci
    WHERE ci.ctid = ANY (ARRAY(
        SELECT x.ctid FROM mbus.client_iids AS x
        WHERE x.posted_at <= v_before AND (p_qname IS NULL OR x.qname = p_qname)
        LIMIT p_limit FOR UPDATE SKIP LOCKED));
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$$;
