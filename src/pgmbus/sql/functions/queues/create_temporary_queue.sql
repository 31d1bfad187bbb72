-- Function: mbus.create_temporary_queue()
--
-- Purpose:  A new queue 'tq_<n>' (n from mbus.temp_seq) that lives as long as this session: it is
--           recorded in mbus.temp_object with the session's pid and start, and mbus.clear_tempq
--           drops it once the session has ended. Collects ended sessions' objects first. Used for
--           replies (request-response).
-- Params:   none
-- Returns:  text: the queue's name
-- Locks:    those of mbus.clear_tempq and mbus.create_queue (pg_advisory_xact_lock(1835165041))
-- Callers:  pgmbus.queues Bus.create_temporary_queue / AsyncBus.create_temporary_queue via
--           sql/queues.sql 'create_temporary_queue' (Bus.request's reply queue); tests
--           tests/queues/test_queues2_temp.py
CREATE OR REPLACE FUNCTION mbus.create_temporary_queue()
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text := 'tq_' || nextval('mbus.temp_seq');
    s   record := mbus.my_session();
BEGIN
    PERFORM mbus.clear_tempq();
    PERFORM mbus.create_queue(v_q, 1);
    INSERT INTO mbus.temp_object (kind, qname, pid, backend_start)
    VALUES ('queue', v_q, s.pid, s.backend_start);
    RETURN v_q;
END;
$$;
