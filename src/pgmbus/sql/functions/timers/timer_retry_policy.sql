-- Function: mbus.timer_retry_policy(p_retry)
--
-- Purpose:  A retry policy with its defaults filled in and its values checked, as it is stored
--           with a callback or schedule. Defaults: 2 fast retries (calls within one attempt),
--           kind 'constant', delay_s 60, factor 2, max_delay_s 3600; given keys override them
--           (JSON nulls are ignored). fast_retries must be an integer from 0 to 10, kind
--           'constant' or 'exponential', delay_s and max_delay_s > 0, factor >= 1.
-- Params:   p_retry  the policy given by the user (jsonb object; NULL or JSON null = defaults)
-- Returns:  jsonb {fast_retries, kind, delay_s, factor, max_delay_s} (and any extra keys
--           given); MB006 for a non-object or a bad value
-- Locks:    none (computes only)
-- Callers:  mbus.timer_create_many, mbus.timer_schedule_create
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
