-- Function: mbus._capture_truncate()
--
-- Purpose:  The TRUNCATE trigger of a captured table (AFTER TRUNCATE FOR EACH STATEMENT): appends
--           one event {"op": "truncate", "table": ...} with no key, in the truncating
--           transaction. Unlike _capture_row it sends no notification: listeners find the event
--           at their next poll or with the next notification. SECURITY DEFINER (search_path
--           pinned), so the truncating role needs no privilege on mbus.events.
-- Params:   none (trigger argument: TG_ARGV[0] the topic)
-- Returns:  trigger: NULL (an AFTER trigger); MB009 when the log is not this cluster's
-- Locks:    none beyond the INSERT into mbus.events (ROW EXCLUSIVE)
-- Callers:  the trigger mbus_capture_truncate that mbus.capture_table creates on a captured
--           table; tests/streams/test_streams_security.py (catalog test)
CREATE OR REPLACE FUNCTION mbus._capture_truncate()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM mbus._check_log();
    INSERT INTO mbus.events (topic, payload)
    VALUES (TG_ARGV[0], jsonb_build_object('op', 'truncate', 'table',
                                           format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME)));
    RETURN NULL;
END;
$$;
