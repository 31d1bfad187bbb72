-- Function: mbus.stop_capture(tbl, missing_ok)
--
-- Purpose:  Stop capturing tbl: remove its row of mbus.captures and its triggers
--           mbus_capture_row and mbus_capture_truncate. Events already published stay.
-- Params:   tbl         the table (regclass)
--           missing_ok  no error when tbl is not captured (boolean; false unless given)
-- Returns:  void; MB002 when tbl is not captured (or NULL) and missing_ok is false (or NULL)
-- Locks:    ACCESS EXCLUSIVE on tbl when a trigger is dropped (DROP TRIGGER), held to commit;
--           the row of mbus.captures (DELETE)
-- Calls:    none
-- Tables:   mbus.captures
CREATE OR REPLACE FUNCTION mbus.stop_capture(tbl regclass, missing_ok boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.captures AS c WHERE c.tbl = stop_capture.tbl;
    IF NOT FOUND AND NOT coalesce(missing_ok, false) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('table %s is not captured', coalesce(tbl::text, 'NULL'));
    END IF;
    IF tbl IS NULL THEN
        RETURN;  -- missing_ok: no table, no trigger (a NULL went on to a syntax error)
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS mbus_capture_row ON %s', tbl);
    EXECUTE format('DROP TRIGGER IF EXISTS mbus_capture_truncate ON %s', tbl);
END;
$$;
