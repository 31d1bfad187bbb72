-- Function: mbus.check_payload(what, value, nullable)
--
-- Purpose:  Raise MB005 unless value is a JSON object (payloads are jsonb objects, not the original
--           API's hstore) nested at most 100 levels deep (mbus.json_too_deep); NULL passes when
--           nullable. The error names the argument.
-- Params:   what      the argument's name for the message, e.g. 'data' (text)
--           value     the value to check (jsonb)
--           nullable  whether NULL is allowed (boolean; default true)
-- Returns:  void; raises MB005
-- Locks:    none
-- Calls:    mbus.json_too_deep
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.check_payload(what text, value jsonb, nullable boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF value IS NULL THEN
        IF NOT nullable THEN
            RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = format('%s must not be null', what);
        END IF;
    ELSIF jsonb_typeof(value) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = format('%s must be a JSON object, not %s', what, jsonb_typeof(value));
    ELSIF mbus.json_too_deep(value) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = format('%s is nested more than 100 levels deep', what);
    END IF;
END;
$$;
