-- Function: mbus.timer_retry_policy(p_retry)
--
-- Purpose:  timer_retry_policy(retry): the retry policy with defaults filled in and values checked (MB006).
--           Defaults: 2 fast retries, constant retries every 60 s, factor 2, at most 3600 s apart.
-- Params:   p_retry jsonb FILL
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_retry_policy(p_retry jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_in jsonb := coalesce(nullif(p_retry, 'null'), '{}');
    r jsonb;
BEGIN
    IF jsonb_typeof(v_in) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'retry must be a JSON object';
    END IF;
    r := jsonb_build_object('fast_retries', 2, 'kind', 'constant', 'delay_s', 60,
                            'factor', 2, 'max_delay_s', 3600) || jsonb_strip_nulls(v_in);
    IF (r->>'fast_retries')::numeric NOT BETWEEN 0 AND 10
       OR (r->>'fast_retries')::numeric <> trunc((r->>'fast_retries')::numeric) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'retry.fast_retries must be an integer from 0 to 10';
    END IF;
    IF r->>'kind' NOT IN ('constant', 'exponential') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('retry.kind must be constant or exponential, not %L', r->>'kind');
    END IF;
    IF (r->>'delay_s')::float8 <= 0 OR (r->>'max_delay_s')::float8 <= 0
       OR (r->>'factor')::float8 < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'retry.delay_s and max_delay_s must be > 0 and factor >= 1';
    END IF;
    RETURN r;
END;
$$;
