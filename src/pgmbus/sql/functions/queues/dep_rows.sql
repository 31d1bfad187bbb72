-- Function: mbus.dep_rows(iid)
--
-- Purpose:  Where the deliveries of iid are: the generated function deps_<q> of the queue its iid
--           names (consume_after's statements on that queue's deliveries) and, for an iid of the
--           queue's own form ('<q>.<id>@<db>', not stored), its id; otherwise id is NULL and the
--           deliveries are found by the iid column. fn is NULL when iid names no existing queue.
--           An iid of another database ('<q>.<n>@<db>', as the exchange carries it) is looked
--           for in every queue here (a route delivers it to a queue of its choice, not
--           necessarily q): fn is the deps_ of the first queue (by name) holding a delivery of
--           it, NULL when none does.
--           The caller runs fn with EXECUTE format('SELECT mbus.%I(...)', fn): planning a call
--           costs a fraction of planning the statements themselves.
-- Params:   iid  the dependency's iid (text)
-- Returns:  record (fn text: 'deps_<qname>', the name mbus.generated_names gives; id bigint),
--           or NULLs when there is no such queue (no queue holding it, for another database's)
-- Locks:    none (reads mbus.queue; for another database's iid, each queue's iid index)
-- Callers:  mbus.await_deps, mbus.release_deps
CREATE OR REPLACE FUNCTION mbus.dep_rows(iid text, OUT fn text, OUT id bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q     text := mbus.queue_of_iid(iid);
    v_found boolean;
BEGIN
    IF v_q IS NOT NULL
       AND (regexp_match(iid, '^[a-z][a-z0-9_]*\.[0-9]+@(.*)$'))[1] <> current_database() THEN
        FOR v_q IN SELECT q.qname FROM mbus.queue AS q ORDER BY q.qname LOOP
            EXECUTE format('SELECT EXISTS (SELECT 1 FROM mbus.%I AS q WHERE q.iid = $1)',
                           'q_' || v_q)
            INTO v_found USING iid;
            IF v_found THEN
                fn := 'deps_' || v_q;
                RETURN;
            END IF;
        END LOOP;
        RETURN;
    END IF;
    IF v_q IS NULL OR NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = v_q) THEN
        RETURN;
    END IF;
    fn := 'deps_' || v_q;
    id := mbus.iid_id(iid, v_q);
END;
$$;
