-- Function: mbus.restrict_public_execute()
--
-- Purpose:  Make PUBLIC's EXECUTE on mbus functions match mbus.public_entry_points(): grant
--           to the listed ones, revoke from all others. Functions are executable by PUBLIC when
--           created and per-schema default privileges cannot take that away, so the installer
--           calls this last, after every function file and the generated queue functions.
-- Params:   none
-- Returns:  void
-- Locks:    none beyond the catalog rows of the GRANT/REVOKE it runs per function
-- Calls:    mbus.public_entry_points
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.restrict_public_execute()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    f regprocedure;
    listed boolean;
BEGIN
    FOR f, listed IN
        SELECT p.oid::regprocedure,
               p.oid::regprocedure::text = ANY (mbus.public_entry_points())
        FROM pg_proc AS p
        WHERE p.pronamespace = 'mbus'::regnamespace AND p.prokind IN ('f', 'p')
    LOOP
        IF listed THEN
            EXECUTE format('GRANT EXECUTE ON ROUTINE %s TO PUBLIC', f);
        ELSE
            EXECUTE format('REVOKE EXECUTE ON ROUTINE %s FROM PUBLIC', f);
        END IF;
    END LOOP;
END;
$$;
