-- Function: mbus.timer_notify_change()
--
-- Purpose:  FILL
-- Params:   none
-- Returns:  trigger
-- Locks:    FILL
-- Callers:  FILL
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
