-- Function: mbus.notify()
--
-- Purpose:  Listeners (LISTEN mbus_events) are woken by publish, publish_batch and the capture
--           triggers with an empty notification, which PostgreSQL folds into one per transaction and
--           delivers at commit. Writers that INSERT or COPY into mbus.events directly call
--           mbus.notify() (or let readers find the events at their next poll).
-- Params:   none
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.notify()
RETURNS void
LANGUAGE sql
AS $$ SELECT pg_notify('mbus_events', '') $$;
