-- Function: mbus.set_setting(key, value)
--
-- Purpose:  Create or replace one setting of mbus.settings, after checking it against the
--           registry mbus.setting_spec(): the key must be known, an interval must be a JSON
--           string that parses as an interval within the key's bounds (so positive), an integer
--           a JSON number without a fraction within its bounds. Nothing is written when a check
--           fails. Integers are stored as integers (2.0 becomes 2); interval strings as given.
-- Params:   key    the setting's key, one of mbus.setting_spec() (e.g. 'streams.retention')
--           value  its value as jsonb (a JSON string such as '"7 days"' for intervals)
-- Returns:  void; MB006 for an unknown key, a NULL value, a value of the wrong JSON type, one
--           that does not parse, or one out of bounds (the message names the key and bounds)
-- Locks:    the row of mbus.settings it inserts or updates
-- Calls:    mbus.setting_spec
-- Tables:   mbus.settings
CREATE OR REPLACE FUNCTION mbus.set_setting(key text, value jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    spec    record;
    v_value jsonb := set_setting.value;
    v_iv    interval;
    v_n     numeric;
BEGIN
    SELECT * INTO spec FROM mbus.setting_spec() AS sp WHERE sp.key = set_setting.key;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown setting %L', set_setting.key),
            HINT = format('known settings: %s',
                          (SELECT string_agg(sp.key, ', ' ORDER BY sp.key)
                           FROM mbus.setting_spec() AS sp));
    END IF;
    IF v_value IS NULL OR jsonb_typeof(v_value) = 'null' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('setting %L needs a value', spec.key);
    END IF;
    IF spec.kind = 'interval' THEN
        IF jsonb_typeof(v_value) <> 'string' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('setting %L must be an interval as a JSON string such as '
                                 '"7 days", not %s', spec.key, left(v_value::text, 200));
        END IF;
        BEGIN
            v_iv := (v_value #>> '{}')::interval;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('setting %L: %L is not an interval', spec.key,
                                 left(v_value #>> '{}', 200));
        END;
        IF v_iv < spec.min_value::interval OR v_iv > spec.max_value::interval THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('setting %L must be between %s and %s, not %s', spec.key,
                                 spec.min_value, spec.max_value, v_iv);
        END IF;
    ELSE  -- 'integer'
        IF jsonb_typeof(v_value) <> 'number' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('setting %L must be an integer (a JSON number), not %s',
                                 spec.key, left(v_value::text, 200));
        END IF;
        v_n := v_value::numeric;
        IF v_n <> trunc(v_n) OR v_n < spec.min_value::numeric
           OR v_n > spec.max_value::numeric THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('setting %L must be an integer between %s and %s, not %s',
                                 spec.key, spec.min_value, spec.max_value, v_n);
        END IF;
        v_value := to_jsonb(v_n::integer);
    END IF;
    INSERT INTO mbus.settings AS s (key, value, description)
    VALUES (spec.key, v_value, spec.description)
    ON CONFLICT ON CONSTRAINT settings_pkey DO UPDATE SET value = excluded.value;
END;
$$;
