-- Function: mbus.create_temporary_consumer(qname, selector)
--
-- Purpose:  create_temporary_consumer(qname, selector): a consumer 'tc_<n>' of qname for this session.
-- Params:   qname text FILL
--           selector text DEFAULT NULL FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
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
