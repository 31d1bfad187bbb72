-- Function: mbus.get_setting(key, fallback)
--
-- Purpose:  Read one setting of mbus.settings (retention, partition interval, staged TTL, ...):
--           its value, or the fallback when the key is not set.
-- Params:   key       the setting's key, e.g. 'streams.retention'
--           fallback  the value to return when the key has no row (NULL unless given)
-- Returns:  jsonb: the stored value or fallback
-- Locks:    none (reads only)
-- Calls:    none
-- Tables:   mbus.settings
CREATE OR REPLACE FUNCTION mbus.get_setting(key text, fallback jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
-- PL/pgSQL, not SQL: an SQL function with SET is never inlined, so its body was planned again
-- on every call (21 µs; timer_create called it four times).
AS $$
BEGIN
    RETURN coalesce((SELECT s.value FROM mbus.settings AS s WHERE s.key = get_setting.key),
                    fallback);
END;
$$;
