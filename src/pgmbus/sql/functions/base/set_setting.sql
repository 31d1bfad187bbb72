-- Function: mbus.set_setting(key, value)
--
-- Purpose:  set_setting(key, value): create or replace a setting.
-- Params:   key text FILL
--           value jsonb FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.set_setting(key text, value jsonb)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    INSERT INTO mbus.settings AS s (key, value) VALUES (set_setting.key, set_setting.value)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
$$;
