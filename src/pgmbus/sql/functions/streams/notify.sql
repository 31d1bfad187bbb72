-- Function: mbus.notify()
--
-- Purpose:  Wake the listeners of the log while a reader waits (a row in mbus.stream_waiter,
--           see mbus.await_events; no notification otherwise: a NOTIFY's commit-time lock is
--           global). Listeners (LISTEN mbus_events) are woken by publish, publish_batch and the
--           capture triggers with an empty notification, which PostgreSQL folds into one per
--           transaction and delivers at commit. Writers that INSERT
--           or COPY into mbus.events directly call mbus.notify() (or let readers find the events
--           at their next poll). Hot path: no SET (see mbus.publish).
-- Params:   none
-- Returns:  void
-- Locks:    none
-- Calls:    none
-- Tables:   mbus.stream_waiter
CREATE OR REPLACE FUNCTION mbus.notify()
RETURNS void
LANGUAGE sql
AS $$ SELECT pg_notify('mbus_events', '') WHERE EXISTS (SELECT 1 FROM mbus.stream_waiter) $$;
