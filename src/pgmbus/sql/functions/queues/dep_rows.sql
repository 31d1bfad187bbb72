-- Function: mbus.dep_rows()
--
-- Purpose:  dep_rows(iid): the delivery table and the WHERE condition (on alias q, $1 = iid) that find
--           the deliveries of iid in the queue its iid names; NULL when there is no such queue.
-- Params:   none
-- Returns:  FILL
-- Locks:    FILL
-- Callers:  FILL
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
