-- Function: mbus.timer_retry_policy(p_retry)
--
-- Purpose:  A retry policy with its defaults filled in (mbus.timer_retry_merge) and its values
--           checked (mbus.timer_retry_problem: fast_retries an integer 0..10, kind 'constant'
--           or 'exponential', delay_s and max_delay_s in (0, 2592000], factor 1..100, no other
--           key), as it is stored with a schedule.
-- Params:   p_retry  the policy given by the user (jsonb object; NULL or JSON null = defaults)
-- Returns:  jsonb {fast_retries, kind, delay_s, factor, max_delay_s}; MB006 with the reason
-- Locks:    none (computes only)
-- Calls:    mbus.timer_retry_merge, mbus.timer_retry_problem
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_retry_policy(p_retry jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_problem text := mbus.timer_retry_problem(p_retry);
BEGIN
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = v_problem;
    END IF;
    RETURN mbus.timer_retry_merge(p_retry);
END;
$$;
