-- Function: mbus.release_scheduled(max_events)
--
-- Purpose:  Append the future-dated events whose delayed_until has passed to the log (with the
--           ids reserved at publish), oldest delayed_until first, and notify readers. Run it in a
--           transaction of its own: its events become readable at commit, as one new
--           transaction. Each event moves exactly once (concurrent calls skip each other's rows).
--           The Python readers (StreamWorker, the SSE listeners of `pgmbus serve`) call it before
--           they read; users of the bare SQL API call it from a scheduler (once a second gives
--           second precision).
-- Params:   max_events  the most events moved by one call (integer >= 1; 1000 unless given)
-- Returns:  integer: how many events were moved (call again while it equals max_events); MB006
--           for a max_events below 1
-- Locks:    row locks on the moved rows of mbus.stream_scheduled; ROW EXCLUSIVE on mbus.events
-- Calls:    mbus.notify
-- Tables:   mbus.events, mbus.stream_scheduled
-- Design:   docs/DESIGN.md#_publish_special-and-release_scheduled-future-dated-events
CREATE OR REPLACE FUNCTION mbus.release_scheduled(max_events integer DEFAULT 1000)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_n integer;
BEGIN
    IF max_events IS NULL OR max_events < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('max_events must be at least 1, not %s', max_events);
    END IF;
    WITH due AS (
        DELETE FROM mbus.stream_scheduled AS s
        WHERE s.id IN (SELECT d.id FROM mbus.stream_scheduled AS d
                       WHERE d.delayed_until <= clock_timestamp()
                       ORDER BY d.delayed_until, d.id
                       LIMIT max_events
                       FOR UPDATE SKIP LOCKED)
        RETURNING s.*)
    INSERT INTO mbus.events (id, topic, key, payload, headers, subscription_id)
    SELECT due.id, due.topic, due.key, due.payload, due.headers, due.subscription_id
    FROM due
    ORDER BY due.delayed_until, due.id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        PERFORM mbus.notify();  -- only while a reader waits (mbus.await_events)
    END IF;
    RETURN v_n;
END;
$$;
