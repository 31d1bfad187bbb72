-- Function: mbus.timer_release(p_dispatcher)
--
-- Purpose:  A dispatcher stopping cleanly frees its buckets at once (the others take them at
--           their next heartbeat instead of after the lease) and removes its row from
--           mbus.timer_dispatchers, so the fair share is counted without it. Its claims stay:
--           the dispatcher gives back what it did not call with mbus.timer_unclaim.
-- Params:   p_dispatcher  the dispatcher's id (text)
-- Returns:  void
-- Locks:    row locks of its mbus.timer_buckets rows and its mbus.timer_dispatchers row
--           (UPDATE, DELETE), held to commit
-- Calls:    none
-- Tables:   mbus.timer_buckets, mbus.timer_dispatchers
CREATE OR REPLACE FUNCTION mbus.timer_release(p_dispatcher text)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    UPDATE mbus.timer_buckets AS b SET owner = NULL, lease_until = NULL
    WHERE b.owner = p_dispatcher;
    DELETE FROM mbus.timer_dispatchers AS d WHERE d.id = p_dispatcher;
$$;
