-- Function: mbus.refuse_clock(p_now)
--
-- Purpose:  Raise MB006 for a clock argument out of range (mbus.given_clock's
--           refusal, in a function of its own so that given_clock stays one inlinable
--           expression).
-- Params:   p_now  the refused clock (timestamptz: before 1900, from 9999 on, or infinite)
-- Returns:  never returns (timestamptz, the type of the expression it stands in)
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.refuse_clock(p_now timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'MB006',
        MESSAGE = format('p_now must be a time from 1900 to 9998, not %s', p_now);
END;
$$;
