-- Function: mbus.set_setting(key, value)
--
-- Purpose:  Create or replace one setting of mbus.settings.
-- Params:   key    the setting's key (lower-case words separated by '.', e.g. 'streams.retention')
--           value  its value as jsonb (a JSON string such as '"7 days"' for intervals)
-- Returns:  void
-- Locks:    the row of mbus.settings it inserts or updates
-- Callers:  operators and tests (SELECT mbus.set_setting(...)); no Python caller yet
CREATE OR REPLACE FUNCTION mbus.set_setting(key text, value jsonb)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    INSERT INTO mbus.settings AS s (key, value) VALUES (set_setting.key, set_setting.value)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value;
$$;
