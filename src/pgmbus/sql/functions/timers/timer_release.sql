-- Function: mbus.timer_release(p_dispatcher)
--
-- Purpose:  timer_release(dispatcher): a dispatcher stopping cleanly frees its buckets at once.
-- Params:   p_dispatcher text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_release(p_dispatcher text)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    UPDATE mbus.timer_buckets AS b SET owner = NULL, lease_until = NULL
    WHERE b.owner = p_dispatcher;
    DELETE FROM mbus.timer_dispatchers AS d WHERE d.id = p_dispatcher;
$$;
