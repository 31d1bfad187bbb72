-- Function: mbus.stop_capture(tbl, missing_ok)
--
-- Purpose:  stop_capture(tbl): remove the capture triggers of tbl.
-- Params:   tbl regclass FILL
--           missing_ok boolean DEFAULT false FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.stop_capture(tbl regclass, missing_ok boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.captures AS c WHERE c.tbl = stop_capture.tbl;
    IF NOT FOUND AND NOT missing_ok THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('table %s is not captured', tbl);
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS mbus_capture_row ON %s', tbl);
    EXECUTE format('DROP TRIGGER IF EXISTS mbus_capture_truncate ON %s', tbl);
END;
$$;
