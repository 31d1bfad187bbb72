-- Function: mbus.get_setting(key, fallback)
--
-- Purpose:  get_setting(key, fallback): the setting's value, or fallback when it is not set.
-- Params:   key text FILL
--           fallback jsonb DEFAULT NULL FILL
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.get_setting(key text, fallback jsonb DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT coalesce((SELECT s.value FROM mbus.settings AS s WHERE s.key = get_setting.key),
                    fallback);
$$;
