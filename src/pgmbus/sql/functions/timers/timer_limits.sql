-- Function: mbus.timer_limits()
--
-- Purpose:  The size limits in force for stored timer fields, read from the settings
--           timers.max_context_bytes (default 65536: bytes of the context's JSON text) and
--           timers.max_url_length (default 4096 bytes); a missing or non-numeric setting means
--           its default. Read once per statement by the callers and passed on.
-- Params:   none
-- Returns:  jsonb {"max_context_bytes": n, "max_url_length": n}
-- Locks:    none (reads mbus.settings)
-- Calls:    mbus.get_setting
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_limits()
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
-- PL/pgSQL, not SQL: with SET an SQL function is planned on every call, and its subquery's
-- settings were read once per reference (four reads for two settings).
AS $$
DECLARE
    c jsonb := mbus.get_setting('timers.max_context_bytes');
    u jsonb := mbus.get_setting('timers.max_url_length');
BEGIN
    RETURN jsonb_build_object(
        'max_context_bytes',
        CASE WHEN jsonb_typeof(c) = 'number' THEN c ELSE '65536' END,
        'max_url_length',
        CASE WHEN jsonb_typeof(u) = 'number' THEN u ELSE '4096' END);
END;
$$;
