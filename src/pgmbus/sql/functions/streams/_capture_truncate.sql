-- Function: mbus._capture_truncate()
--
-- Purpose:  FILL
-- Params:   none
-- Returns:  trigger
-- Locks:    FILL
-- Callers:  FILL
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
