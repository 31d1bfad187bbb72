-- Function: mbus.dep_rows(iid)
--
-- Purpose:  Where the deliveries of iid are: the generated function deps_<q> of the queue its iid
--           names (consume_after's statements on that queue's deliveries) and, for an iid of the
--           queue's own form ('<q>.<id>@<db>', not stored), its id; otherwise id is NULL and the
--           deliveries are found by the iid column. fn is NULL when iid names no existing queue.
--           The caller runs fn with EXECUTE format('SELECT mbus.%I(...)', fn): planning a call
--           costs a fraction of planning the statements themselves.
-- Params:   iid  the dependency's iid (text)
-- Returns:  record (fn text: 'deps_<qname>', the name mbus.generated_names gives; id bigint),
--           or NULLs when there is no such queue
-- Locks:    none (reads mbus.queue)
-- Calls:    mbus.generated_name, mbus.iid_id, mbus.queue_of_iid
-- Tables:   mbus.queue
CREATE OR REPLACE FUNCTION mbus.dep_rows(iid text, OUT fn text, OUT id bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text := mbus.queue_of_iid(iid);
BEGIN
    IF v_q IS NULL OR NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = v_q) THEN
        RETURN;
    END IF;
    fn := mbus.generated_name('function', 'deps', v_q);
    id := mbus.iid_id(iid, v_q);
END;
$$;
