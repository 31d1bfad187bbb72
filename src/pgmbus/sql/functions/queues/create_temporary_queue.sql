-- Function: mbus.create_temporary_queue()
--
-- Purpose:  A new queue 'tq_<n>' (n from mbus.temp_seq) that lives as long as this session: it is
--           recorded in mbus.temp_object with the session's pid and start and the oid of its
--           delivery table, and mbus.clear_tempq drops it once the session has ended (only while it
--           is still that table). It never takes an existing object: a name that is a queue
--           already, or whose generated names are taken (mbus.name_clash), is passed over for the
--           next n. Collects ended sessions' objects first. Used for replies (request-response).
-- Params:   none
-- Returns:  text: the queue's name; MB003 when 1000 names in a row are taken
-- Locks:    those of mbus.clear_tempq and mbus.create_queue (pg_advisory_xact_lock(1835165041),
--           taken first so that the name checked free stays free)
-- Calls:    mbus.clear_tempq, mbus.create_queue, mbus.generated_name, mbus.my_session,
--           mbus.name_clash
-- Tables:   mbus.queue, mbus.temp_object
CREATE OR REPLACE FUNCTION mbus.create_temporary_queue()
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text;
    s   record := mbus.my_session();
BEGIN
    PERFORM mbus.clear_tempq();
    PERFORM pg_advisory_xact_lock(1835165041);
    FOR i IN 1 .. 1000 LOOP
        v_q := 'tq_' || nextval('mbus.temp_seq');
        EXIT WHEN NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = v_q)
                  AND mbus.name_clash(v_q) IS NULL;
        v_q := NULL;
    END LOOP;
    IF v_q IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = 'no free temporary queue name: 1000 names tq_<n> in a row are taken';
    END IF;
    PERFORM mbus.create_queue(v_q, 1);
    INSERT INTO mbus.temp_object (kind, qname, pid, backend_start, obj_id)
    VALUES ('queue', v_q, s.pid, s.backend_start,
            format('mbus.%I', mbus.generated_name('relation', 'table', v_q))::regclass::oid);
    RETURN v_q;
END;
$$;
