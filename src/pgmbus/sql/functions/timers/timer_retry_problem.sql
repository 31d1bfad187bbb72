-- Function: mbus.timer_retry_problem(p_retry)
--
-- Purpose:  Why a retry policy is refused, or NULL when it is fine. Fields, all optional:
--           fast_retries an integer 0..10, kind 'constant' or 'exponential', delay_s and
--           max_delay_s > 0 and <= 2592000 (30 days), factor 1..100; no other field. Numbers
--           are compared as numerics (JSON numbers), so no value can overflow a cast, and the
--           message never echoes more than 40 characters of the input.
-- Params:   p_retry  the policy given by the user (jsonb; NULL or JSON null = defaults)
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_retry_problem(p_retry jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_in jsonb := coalesce(nullif(p_retry, 'null'), '{}');
    v_key text;
    r jsonb;
BEGIN
    IF jsonb_typeof(v_in) <> 'object' THEN
        RETURN 'retry must be a JSON object';
    END IF;
    SELECT k INTO v_key FROM jsonb_object_keys(v_in) AS k
    WHERE k NOT IN ('fast_retries', 'kind', 'delay_s', 'factor', 'max_delay_s') LIMIT 1;
    IF v_key IS NOT NULL THEN
        RETURN format('retry has an unknown field %L', left(v_key, 40));
    END IF;
    FOREACH v_key IN ARRAY ARRAY['fast_retries', 'delay_s', 'factor', 'max_delay_s'] LOOP
        IF jsonb_typeof(v_in->v_key) NOT IN ('number', 'null') THEN
            RETURN format('retry.%s must be a number', v_key);
        END IF;
    END LOOP;
    r := jsonb_build_object('fast_retries', 2, 'kind', 'constant', 'delay_s', 60,
                            'factor', 2, 'max_delay_s', 3600) || jsonb_strip_nulls(v_in);
    -- JSON numbers are numerics: compared as such, no value can overflow a cast
    IF NOT ((r->>'fast_retries')::numeric BETWEEN 0 AND 10)
       OR (r->>'fast_retries')::numeric <> trunc((r->>'fast_retries')::numeric) THEN
        RETURN 'retry.fast_retries must be an integer from 0 to 10';
    END IF;
    IF jsonb_typeof(r->'kind') <> 'string' OR r->>'kind' NOT IN ('constant', 'exponential') THEN
        RETURN 'retry.kind must be constant or exponential';
    END IF;
    IF NOT ((r->>'delay_s')::numeric > 0 AND (r->>'delay_s')::numeric <= 2592000) THEN
        RETURN 'retry.delay_s must be > 0 and <= 2592000 (30 days)';
    END IF;
    IF NOT ((r->>'max_delay_s')::numeric > 0 AND (r->>'max_delay_s')::numeric <= 2592000) THEN
        RETURN 'retry.max_delay_s must be > 0 and <= 2592000 (30 days)';
    END IF;
    IF NOT ((r->>'factor')::numeric BETWEEN 1 AND 100) THEN
        RETURN 'retry.factor must be from 1 to 100';
    END IF;
    RETURN NULL;
END;
$$;
