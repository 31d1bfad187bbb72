-- Function: mbus.timer_retry_merge(p_retry)
--
-- Purpose:  A retry policy with its defaults filled in, unchecked: 2 fast retries, kind
--           'constant', delay_s 60, factor 2, max_delay_s 3600; given keys override them
--           (JSON nulls ignored). For values already checked (timer_create_many's items, after
--           mbus.timer_item_problem), so a batch checks each policy once.
-- Params:   p_retry  the policy (jsonb; NULL or JSON null = defaults)
-- Returns:  jsonb {fast_retries, kind, delay_s, factor, max_delay_s}
-- Locks:    none (computes only)
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_retry_merge(p_retry jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
-- PL/pgSQL, not SQL: with SET an SQL function is planned on every call (timer_create_many
-- calls it once per use of an item's retry, five times per timer).
AS $$
BEGIN
    RETURN '{"fast_retries": 2, "kind": "constant", "delay_s": 60, "factor": 2,
             "max_delay_s": 3600}'::jsonb
           || jsonb_strip_nulls(coalesce(nullif(p_retry, 'null'), '{}'));
END;
$$;
