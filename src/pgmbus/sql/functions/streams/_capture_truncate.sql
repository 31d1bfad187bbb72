-- Function: mbus._capture_truncate()
--
-- Purpose:  The TRUNCATE trigger of a captured table (AFTER TRUNCATE FOR EACH STATEMENT): appends
--           one event {"op": "truncate", "table": ...} with no key, in the truncating
--           transaction, and notifies listeners of 'mbus_events' as _capture_row does.
--           A statement trigger is not cloned to partitions: a TRUNCATE
--           of one partition of a captured partitioned table appends no event. SECURITY DEFINER (search_path
--           pinned), so the truncating role needs no privilege on mbus.events.
-- Params:   none (trigger argument: TG_ARGV[0] the topic)
-- Returns:  trigger: NULL (an AFTER trigger); MB009 when the log is not this cluster's
-- Locks:    none beyond the INSERT into mbus.events (ROW EXCLUSIVE)
-- Calls:    mbus._check_log
-- Tables:   mbus.events, mbus.stream_waiter
CREATE OR REPLACE FUNCTION mbus._capture_truncate()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes' THEN
        PERFORM mbus._check_log();
    END IF;
    INSERT INTO mbus.events (topic, payload)
    VALUES (TG_ARGV[0], jsonb_build_object('op', 'truncate', 'table',
                                           format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME)));
    IF EXISTS (SELECT 1 FROM mbus.stream_waiter) THEN
        PERFORM pg_notify('mbus_events', '');
    END IF;
    RETURN NULL;
END;
$$;
