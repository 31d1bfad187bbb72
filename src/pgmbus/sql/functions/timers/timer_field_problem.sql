-- Function: mbus.timer_field_problem(p_limits, p_run_at, p_originally_run_at, p_url,
--                                     p_context, p_stop_after_delay_s)
--
-- Purpose:  Why one of the given fields of a callback or schedule is refused, or NULL: times
--           (mbus.timer_time_problem), the URL (at most max_url_length bytes, http or https
--           without white space), the context (an object of at most max_context_bytes bytes of
--           JSON text, nested at most 100 levels deep), stop_after_delay_s (0..31622400, 366
--           days; NaN refused). NULL fields are not checked. Messages name the setting that sets
--           a limit.
-- Params:   p_limits  mbus.timer_limits() of the statement
--           the fields, each NULL when not given
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Calls:    mbus.json_too_deep, mbus.timer_time_problem
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_field_problem(p_limits jsonb,
    p_run_at timestamptz DEFAULT NULL, p_originally_run_at timestamptz DEFAULT NULL,
    p_url text DEFAULT NULL, p_context jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_size bigint;
    v_problem text;
BEGIN
    IF p_run_at IS NOT NULL OR p_originally_run_at IS NOT NULL THEN
        v_problem := coalesce(mbus.timer_time_problem('run_at', p_run_at),
                              mbus.timer_time_problem('originally_run_at', p_originally_run_at));
        IF v_problem IS NOT NULL THEN
            RETURN v_problem;
        END IF;
    END IF;
    IF p_url IS NOT NULL THEN
        IF octet_length(p_url) > (p_limits->>'max_url_length')::bigint THEN
            RETURN format('url is %s bytes long; the limit is %s (setting timers.max_url_length)',
                          octet_length(p_url), p_limits->>'max_url_length');
        END IF;
        IF p_url !~* '^https?://[^[:space:]]+$' THEN
            RETURN 'url must be an http or https URL without white space';
        END IF;
    END IF;
    IF p_context IS NOT NULL THEN
        IF jsonb_typeof(p_context) <> 'object' THEN
            RETURN 'context must be a JSON object';
        END IF;
        v_size := octet_length(p_context::text);
        IF v_size > (p_limits->>'max_context_bytes')::bigint THEN
            RETURN format('context is %s bytes of JSON; the limit is %s '
                          '(setting timers.max_context_bytes)',
                          v_size, p_limits->>'max_context_bytes');
        END IF;
        -- as messages and events (mbus.json_too_deep): the dispatcher reads each claimed
        -- callback's context, so a deeper one would fail the claim of its whole batch
        IF mbus.json_too_deep(p_context) THEN
            RETURN 'context is nested more than 100 levels deep';
        END IF;
    END IF;
    IF p_stop_after_delay_s IS NOT NULL
       AND NOT (p_stop_after_delay_s >= 0 AND p_stop_after_delay_s <= 31622400) THEN
        RETURN 'stop_after_delay_s must be from 0 to 31622400 (366 days)';
    END IF;
    RETURN NULL;
END;
$$;
