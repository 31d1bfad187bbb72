-- Function: mbus.timer_clean_if_due(p_ttl_days, p_every_s, p_now)
--
-- Purpose:  timer_clean_if_due(ttl_days, every_s, now): run timer_clean when it last ran more than
--           every_s ago (default daily); several dispatchers call it, one runs it (SKIP LOCKED).
--           Returns true when it ran.
-- Params:   p_ttl_days integer DEFAULT 30 FILL
--           p_every_s double precision DEFAULT 86400 FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_clean_if_due(p_ttl_days integer DEFAULT 30,
    p_every_s double precision DEFAULT 86400, p_now timestamptz DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_last timestamptz;
BEGIN
    SELECT j.last_run_at INTO v_last FROM mbus.timer_jobs AS j
    WHERE j.name = 'clean' FOR UPDATE SKIP LOCKED;
    IF NOT FOUND OR (v_last IS NOT NULL
                     AND v_last > v_now - make_interval(secs => p_every_s)) THEN
        RETURN false;
    END IF;
    PERFORM mbus.timer_clean(p_ttl_days, v_now);
    RETURN true;
END;
$$;
