-- Function: mbus.saga_pump(amount)
--
-- Purpose:  saga_pump(amount): handle up to amount final and done messages: a final message completes
--           its saga (taking the compensations, the done message and the bung); a done message marks
--           the rollback finished. Returns how many it handled.
-- Params:   amount integer DEFAULT 100 FILL
-- Returns:  integer
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.saga_pump(amount integer DEFAULT 100)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    m mbus.qt_model;
    x text;
    n integer := 0;
BEGIN
    PERFORM mbus.saga_queue('mbus_saga_final');
    PERFORM mbus.saga_queue('mbus_saga_done');
    FOR m IN SELECT * FROM mbus.consumen_mbus_saga_final_by_default(amount) LOOP
        FOR x IN SELECT jsonb_array_elements_text(m.data -> 'take') LOOP
            PERFORM mbus.take(x);
        END LOOP;
        UPDATE mbus.saga AS g SET state = 'completed', finished_at = clock_timestamp()
        WHERE g.saga_id = (m.data ->> 'saga_id')::bigint AND g.state = 'running';
        n := n + 1;
    END LOOP;
    FOR m IN SELECT * FROM mbus.consumen_mbus_saga_done_by_default(amount) LOOP
        UPDATE mbus.saga AS g SET state = 'compensated', finished_at = clock_timestamp()
        WHERE g.saga_id = (m.data ->> 'saga_id')::bigint AND g.state = 'compensating';
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
