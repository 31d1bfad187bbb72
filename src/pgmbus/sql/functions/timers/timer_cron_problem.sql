-- Function: mbus.timer_cron_problem(p_cron)
--
-- Purpose:  Why a cron expression is refused, or NULL (NULL cron: fine). Checked in SQL: at
--           most 100 characters, only the characters cron uses, exactly 5 fields (minute hour
--           day-of-month month day-of-week: croniter would read a sixth as seconds), and a
--           date that never exists: with day-of-week '*' or '?' and plain lists of numbers as
--           day-of-month and month, no listed month has a listed day (0 0 31 2 *). Ranges and
--           steps are left to the Python scheduler (croniter), which pauses a schedule it
--           cannot compute (mbus.timer_schedule_pause_broken).
-- Params:   p_cron  the expression
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_cron_problem(p_cron text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    f text[];
BEGIN
    IF p_cron IS NULL THEN
        RETURN NULL;
    END IF;
    IF length(p_cron) > 100 THEN
        RETURN 'cron must be at most 100 characters';
    END IF;
    IF p_cron !~ '^[0-9A-Za-z*/,?#[:space:]-]+$' THEN
        RETURN format('cron %L has characters cron does not use', p_cron);
    END IF;
    f := regexp_split_to_array(btrim(p_cron), '[[:space:]]+');
    IF coalesce(array_length(f, 1), 0) <> 5 THEN
        RETURN format('cron %L must have 5 fields: minute hour day-of-month month day-of-week',
                      p_cron);
    END IF;
    IF f[5] IN ('*', '?') AND f[3] ~ '^[0-9]{1,2}(,[0-9]{1,2})*$'
       AND f[4] ~ '^[0-9]{1,2}(,[0-9]{1,2})*$'
       AND NOT EXISTS (
           SELECT FROM unnest(string_to_array(f[3], ',')::integer[]) AS d,
                       unnest(string_to_array(f[4], ',')::integer[]) AS m
           WHERE m BETWEEN 1 AND 12
             AND d BETWEEN 1 AND (ARRAY[31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[m]) THEN
        RETURN format('cron %L never fires: no month %s has a day %s', p_cron, f[4], f[3]);
    END IF;
    RETURN NULL;
END;
$$;
