-- Function: mbus.consume_wait(qname, cname, timeout, poll)
--
-- Purpose:  consume_wait(qname, cname, timeout, poll): consume, waiting up to timeout for a message
--           (the seed: consuming from a temporary queue can block). Polls inside the call; clients
--           that can LISTEN (the Python Bus) wait on notifications instead.
-- Params:   qname text FILL
--           cname text DEFAULT 'default' FILL
--           timeout interval DEFAULT '10 seconds' FILL
--           poll interval DEFAULT '20 milliseconds' FILL
-- Returns:  SETOF mbus.qt_model
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.consume_wait(qname text, cname text DEFAULT 'default',
                                  timeout interval DEFAULT '10 seconds',
                                  poll interval DEFAULT '20 milliseconds')
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_until timestamptz := clock_timestamp() + timeout;
    v_fn    text := format('consume_%s_by_%s', qname, cname);
    m       mbus.qt_model;
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    LOOP
        EXECUTE format('SELECT * FROM mbus.%I()', v_fn) INTO m;
        IF m.id IS NOT NULL THEN
            RETURN NEXT m;
            RETURN;
        END IF;
        EXIT WHEN clock_timestamp() >= v_until;
        PERFORM pg_sleep(extract(epoch FROM least(poll, v_until - clock_timestamp())));
    END LOOP;
END;
$$;
