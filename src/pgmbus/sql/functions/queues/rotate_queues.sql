-- Function: mbus.rotate_queues()
--
-- Purpose:  rotate_queues(): rotate_queue for every queue; returns {queue: report} (call in autocommit).
-- Params:   none
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.rotate_queues()
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q      text;
    v_report jsonb := '{}';
BEGIN
    FOR v_q IN SELECT s.qname FROM mbus.queue_segment AS s ORDER BY s.qname LOOP
        v_report := v_report || jsonb_build_object(v_q, mbus.rotate_queue(v_q));
    END LOOP;
    RETURN v_report;
END;
$$;
