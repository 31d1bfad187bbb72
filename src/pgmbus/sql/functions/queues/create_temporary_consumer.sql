-- Function: mbus.create_temporary_consumer(qname, selector)
--
-- Purpose:  A consumer 'tc_<n>' of qname (n from mbus.temp_seq) that lives as long as this session:
--           recorded in mbus.temp_object, dropped by mbus.clear_tempq once the session has ended.
--           Collects ended sessions' objects first.
-- Params:   qname     the queue's name (text)
--           selector  a static boolean expression over t (text; NULL = all)
-- Returns:  text: the consumer's name
-- Locks:    those of mbus.clear_tempq and mbus.create_consumer (pg_advisory_xact_lock(1835165041))
-- Callers:  pgmbus.queues Bus.create_temporary_consumer / AsyncBus.create_temporary_consumer via
--           sql/queues.sql 'create_temporary_consumer'; tests tests/queues/test_queues2_temp.py
CREATE OR REPLACE FUNCTION mbus.create_temporary_consumer(qname text, selector text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_c text := 'tc_' || nextval('mbus.temp_seq');
    s   record := mbus.my_session();
BEGIN
    PERFORM mbus.clear_tempq();
    PERFORM mbus.create_consumer(qname, v_c, selector);
    INSERT INTO mbus.temp_object (kind, qname, cname, pid, backend_start)
    VALUES ('consumer', qname, v_c, s.pid, s.backend_start);
    RETURN v_c;
END;
$$;
