-- Function: mbus.dep_rows(iid)
--
-- Purpose:  Where the deliveries of iid are: the delivery table of the queue its iid names and a
--           WHERE condition on alias q with $1 = iid, by id for the queue's own iids (not stored)
--           and by the iid column otherwise. Both NULL when iid names no existing queue. The caller
--           pastes them into format().
-- Params:   iid  the dependency's iid (text)
-- Returns:  record (tbl text: 'q_<qname>', cond text), or NULLs when there is no such queue
-- Locks:    none (reads mbus.queue)
-- Callers:  mbus.await_deps, mbus.release_deps
CREATE OR REPLACE FUNCTION mbus.dep_rows(iid text, OUT tbl text, OUT cond text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text := mbus.queue_of_iid(iid);
BEGIN
    IF v_q IS NULL OR NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = v_q) THEN
        RETURN;
    END IF;
    tbl := 'q_' || v_q;
    cond := CASE WHEN mbus.iid_id(iid, v_q) IS NOT NULL
                 THEN format('q.id = %s AND q.iid IS NULL', mbus.iid_id(iid, v_q))
                 ELSE 'q.iid = $1' END;
END;
$$;
