-- Function: mbus.timer_notify_change()
--
-- Purpose:  Tell the dispatchers at once that a user changed a callback, so that a callback
--           claimed ahead is not called after it was cancelled, deleted or moved. A dispatcher
--           claims callbacks up to lookahead_s before their run_at and holds them in memory
--           until due. An update, cancel or delete drops the claim in the database; without
--           word of it the dispatcher would still call the URL at the old run_at (its result
--           then ignored). Every such change writes a row to mbus.timer_change_log, so this
--           trigger (timer_change_log_notify, AFTER INSERT FOR EACH ROW WHEN action IN
--           ('update', 'cancel', 'delete'), defined below the function) notifies channel
--           'mbus_timer_changed' with '<callback id>:<attempt of the dropped claim>' ('<callback
--           id>' alone after a delete: the row is gone). Dispatchers LISTEN on it and discard
--           the matching claim before calling. The attempt number tells an old claim from a new
--           one: a callback moved to a later run_at is claimed again with the next attempt
--           number, which a late notification must not discard. Only user changes notify (not
--           creates, statuses or retries), so the delivery path pays nothing.
-- Params:   none (a trigger function; NEW is the inserted mbus.timer_change_log row)
-- Returns:  trigger: NULL (an AFTER trigger)
-- Locks:    none (reads the callback's attempts); the notification is queued at commit, which
--           serializes with other notifying commits
-- Calls:    mbus.timer_notify_change
-- Tables:   mbus.timer_callbacks, mbus.timer_change_log
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
