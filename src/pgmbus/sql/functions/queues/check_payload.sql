-- Function: mbus.check_payload(what, value, nullable)
--
-- Purpose:  check_payload(what, value, nullable): raise MB005 unless value is a JSON object.
-- Params:   what text FILL
--           value jsonb FILL
--           nullable boolean DEFAULT true FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
    END IF;
END;
$$;
