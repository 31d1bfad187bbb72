-- Function: mbus.timer_notify_change()
--
-- Purpose:  Trigger function of timer_change_log_notify (AFTER INSERT FOR EACH ROW WHEN action
--           IN ('update', 'cancel', 'delete') on mbus.timer_change_log, defined below it): it
--           notifies channel 'mbus_timer_changed' with '<callback id>:<attempt of the dropped
--           claim>' ('<callback id>' alone after a delete). Dispatchers LISTEN on it and discard
--           the matching claim they hold in memory before calling, so a callback claimed ahead is
--           not called after it was cancelled, deleted or moved. Only user changes notify.
-- Params:   none (a trigger function; NEW is the inserted mbus.timer_change_log row)
-- Returns:  trigger: NULL (an AFTER trigger)
-- Locks:    none (reads the callback's attempts); the notification is queued at commit, which
--           serializes with other notifying commits
-- Calls:    mbus.timer_notify_change
-- Tables:   mbus.timer_callbacks, mbus.timer_change_log
-- Design:   docs/DESIGN.md#timer_notify_change-claims-held-in-memory
CREATE OR REPLACE FUNCTION mbus.timer_notify_change()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_attempt integer;
BEGIN
    SELECT c.attempts INTO v_attempt FROM mbus.timer_callbacks AS c WHERE c.id = NEW.callback_id;
    PERFORM pg_notify('mbus_timer_changed',
                      NEW.callback_id::text || coalesce(':' || v_attempt::text, ''));
    RETURN NULL;
END;
$$;

CREATE OR REPLACE TRIGGER timer_change_log_notify
    AFTER INSERT ON mbus.timer_change_log
    FOR EACH ROW WHEN (NEW.action IN ('update', 'cancel', 'delete'))
    EXECUTE FUNCTION mbus.timer_notify_change();
