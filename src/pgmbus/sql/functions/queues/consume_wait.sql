-- Function: mbus.consume_wait(qname, cname, timeout, poll)
--
-- Purpose:  Consume one message, waiting up to timeout for one to arrive: the original mbus API's
--           blocking consume (consuming from a temporary queue, e.g. for a reply, can block). It
--           polls consume_<qname>_by_<cname> inside the call every poll interval (each poll is a
--           new statement, so it sees posts committed meanwhile); clients that can LISTEN (the
--           Python Bus, through mbus.await_queue) wait on notifications instead.
-- Params:   qname    the queue's name (text)
--           cname    the consumer's name (text; default 'default')
--           timeout  how long to wait at most (interval; default 10 seconds)
--           poll     the sleep between polls (interval; default 20 milliseconds)
-- Returns:  SETOF mbus.qt_model: one message, or no row when timeout passed without one;
--           MB001/MB002 for a bad or unknown queue or consumer, MB006 for a timeout not from 0
--           to 1 day or a poll not from 1 millisecond to 1 minute (NULL included)
-- Locks:    those of mbus.consume for the message it returns (FOR UPDATE SKIP LOCKED, then DELETE,
--           held to commit); none while it sleeps, but the caller's transaction stays open for up
--           to timeout
-- Calls:    mbus.generated_name, mbus.require_consumer
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.consume_wait(qname text, cname text DEFAULT 'default',
                                  timeout interval DEFAULT '10 seconds',
                                  poll interval DEFAULT '20 milliseconds')
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_until timestamptz;
    v_fn    text := mbus.generated_name('function', 'consume', qname, cname);
    m       mbus.qt_model;
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    -- bounded: a NULL timeout never ended the loop, a zero or negative poll spun on the CPU
    IF timeout IS NULL OR timeout < interval '0' OR timeout > interval '1 day' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('timeout %s is not from 0 to 1 day', coalesce(timeout::text, 'NULL'));
    END IF;
    IF poll IS NULL OR poll < interval '1 millisecond' OR poll > interval '1 minute' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('poll %s is not from 1 millisecond to 1 minute',
                             coalesce(poll::text, 'NULL'));
    END IF;
    v_until := clock_timestamp() + timeout;
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
