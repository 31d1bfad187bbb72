-- Function: mbus.saga_pump(amount)
--
-- Purpose:  Handle up to amount final and up to amount done messages: a final message completes its
--           saga (taking the compensations, the done message and the bung; 'completed'); a done
--           message marks the rollback finished ('compensated'). Run it repeatedly; it makes the
--           saga service queues when missing.
-- Params:   amount  the most messages of each kind to handle (integer; default 100)
-- Returns:  integer: how many messages it handled
-- Locks:    mbus.consumen's FOR UPDATE SKIP LOCKED and DELETE on mbus_saga_final / mbus_saga_done
--           deliveries; mbus.take's DELETEs (waiting for holders); UPDATE of mbus.saga rows
-- Calls:    mbus.consumen, mbus.saga_queue, mbus.take
-- Tables:   mbus.saga
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
    -- through mbus.consumen: the generated consumen_<q>_by_<c> exist only once saga_queue
    -- made the queues, so named here they would not resolve in a schema without saga queues
    -- (plpgsql_check reports that as an error)
    FOR m IN SELECT * FROM mbus.consumen('mbus_saga_final', 'default', amount) LOOP
        FOR x IN SELECT jsonb_array_elements_text(m.data -> 'take') LOOP
            PERFORM mbus.take(x);
        END LOOP;
        UPDATE mbus.saga AS g SET state = 'completed', finished_at = clock_timestamp()
        WHERE g.saga_id = (m.data ->> 'saga_id')::bigint AND g.state = 'running';
        n := n + 1;
    END LOOP;
    FOR m IN SELECT * FROM mbus.consumen('mbus_saga_done', 'default', amount) LOOP
        UPDATE mbus.saga AS g SET state = 'compensated', finished_at = clock_timestamp()
        WHERE g.saga_id = (m.data ->> 'saga_id')::bigint AND g.state = 'compensating';
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
