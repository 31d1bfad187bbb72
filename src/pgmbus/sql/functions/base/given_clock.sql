-- Function: mbus.given_clock(p_now)
--
-- Purpose:  The clock a caller passed (the trailing p_now of every clock-dependent function;
--           tests move it), or NULL when none was; MB006 (mbus.refuse_clock) unless it is from
--           1900 to 9998, as the times a message may carry. Callers write
--           coalesce(mbus.given_clock(p_now), clock_timestamp()). Inlined where it is called.
-- Params:   p_now  the caller's clock (timestamptz, NULL = none)
-- Returns:  timestamptz: p_now when NULL or in range
-- Locks:    none
-- Calls:    mbus.refuse_clock
-- Tables:   none
-- Design:   docs/DESIGN.md#inlined-helpers-given_clock-json_too_deep-json_shallow_by_size
CREATE OR REPLACE FUNCTION mbus.given_clock(p_now timestamptz)
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE
        WHEN p_now IS NULL
             OR (p_now OPERATOR(pg_catalog.>) '1900-01-01 00:00+00'::pg_catalog.timestamptz
                 AND p_now OPERATOR(pg_catalog.<) '9999-01-01 00:00+00'::pg_catalog.timestamptz)
        THEN p_now
        ELSE mbus.refuse_clock(p_now) END;
$$;
