-- Function: mbus.create_temporary_queue()
--
-- Purpose:  create_temporary_queue(): a new queue 'tq_<n>' that lives as long as this session.
-- Params:   none
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
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
