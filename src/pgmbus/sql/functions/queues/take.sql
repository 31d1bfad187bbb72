-- Function: mbus.take(iid)
--
-- Purpose:  take(iid): take the message with that iid from the queue its iid names, for every consumer;
--           waits while another transaction holds it. Empty when it is not there (or was posted to a
--           queue other than the one its iid was made for, as the seed warns).
-- Params:   iid text FILL
-- Returns:  SETOF mbus.qt_model
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.take(iid text)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text := mbus.queue_of_iid(iid);
BEGIN
    IF v_q IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('%L is not an mbus iid', iid);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = v_q) THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)', 'take_' || v_q) USING iid;
END;
$$;
