-- Function: mbus.timer_clean()
--
-- Purpose:  cleanup
--           timer_clean(ttl_days, now): delete finished callbacks (status <> 'pending') whose run_at is
--           older than ttl_days, with their attempts, and change log rows older than ttl_days (the seed).
-- Params:   none
-- Returns:  FILL
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_clean(p_ttl_days integer DEFAULT 30, p_now timestamptz DEFAULT NULL,
    OUT callbacks bigint, OUT changes bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_before timestamptz := coalesce(p_now, now()) - make_interval(days => p_ttl_days);
BEGIN
    IF p_ttl_days < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'ttl_days must be >= 0';
    END IF;
    WITH gone AS (
        DELETE FROM mbus.timer_callbacks AS c
        WHERE c.status <> 'pending' AND c.run_at < v_before RETURNING 1)
    SELECT count(*) INTO callbacks FROM gone;
    WITH gone AS (
        DELETE FROM mbus.timer_change_log AS l WHERE l.at < v_before RETURNING 1)
    SELECT count(*) INTO changes FROM gone;
    UPDATE mbus.timer_jobs AS j SET last_run_at = coalesce(p_now, now()) WHERE j.name = 'clean';
END;
$$;
