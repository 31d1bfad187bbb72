-- Function: mbus.timer_time_problem(p_name, p_t)
--
-- Purpose:  Why a time is refused, or NULL: a timer time must be from 1970-01-01 to before
--           9998-01-01 UTC. Infinities and far dates would overflow delays and deadlines, and
--           clients (Python's datetime ends at 9999) could not read them back. PL/pgSQL: as an
--           SQL function with SET it was never inlined and was planned again on every call
--           (twice per timer created).
-- Params:   p_name  the field's name, for the message
--           p_t     the time (NULL = not given: fine)
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_time_problem(p_name text, p_t timestamptz)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF p_t IS NOT NULL
       AND NOT (p_t >= '1970-01-01 00:00:00+00' AND p_t < '9998-01-01 00:00:00+00') THEN
        RETURN format('%s must be from 1970-01-01 to before 9998-01-01 (UTC)', p_name);
    END IF;
    RETURN NULL;
END;
$$;
