-- Function: mbus.create_temporary_consumer(qname, selector)
--
-- Purpose:  A consumer 'tc_<n>' of qname (n from mbus.temp_seq) that lives as long as this session:
--           recorded in mbus.temp_object with its cid, dropped by mbus.clear_tempq once the session
--           has ended (only while it is still that consumer). It never takes an existing object: a
--           name that is a consumer already, or whose generated names are taken
--           (mbus.name_clash), is passed over for the next n. Collects ended sessions' objects
--           first.
-- Params:   qname     the queue's name (text)
--           selector  a static boolean expression over t (text; NULL = all)
-- Returns:  text: the consumer's name; MB003 when 1000 names in a row are taken
-- Locks:    those of mbus.clear_tempq and mbus.create_consumer (pg_advisory_xact_lock(1835165041),
--           taken first so that the name checked free stays free)
-- Calls:    mbus.clear_tempq, mbus.create_consumer, mbus.my_session, mbus.name_clash,
--           mbus.require_queue
-- Tables:   mbus.consumer, mbus.temp_object
CREATE OR REPLACE FUNCTION mbus.create_temporary_consumer(qname text, selector text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_c   text;
    v_cid integer;
    s     record := mbus.my_session();
BEGIN
    PERFORM mbus.clear_tempq();
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_queue(qname);
    FOR i IN 1 .. 1000 LOOP
        v_c := 'tc_' || nextval('mbus.temp_seq');
        EXIT WHEN NOT EXISTS (SELECT 1 FROM mbus.consumer AS c WHERE c.cname = v_c)
                  AND mbus.name_clash(qname, v_c) IS NULL;
        v_c := NULL;
    END LOOP;
    IF v_c IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = 'no free temporary consumer name: 1000 names tc_<n> in a row are taken';
    END IF;
    PERFORM mbus.create_consumer(qname, v_c, selector);
    SELECT c.cid INTO v_cid FROM mbus.consumer AS c
    WHERE c.qname = create_temporary_consumer.qname AND c.cname = v_c;
    INSERT INTO mbus.temp_object (kind, qname, cname, pid, backend_start, obj_id)
    VALUES ('consumer', qname, v_c, s.pid, s.backend_start, v_cid);
    RETURN v_c;
END;
$$;
