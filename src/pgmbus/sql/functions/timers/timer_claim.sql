-- Function: mbus.timer_claim(p_dispatcher, p_buckets, p_limit, p_lease_s, p_now, p_lookahead_s, p_after_run_at, p_after_id)
--
-- Purpose:  timer_claim(dispatcher, buckets, limit, lease_s, now, lookahead_s, after_run_at, after_id):
--           claim up to limit due callbacks of the given buckets in (run_at, id) order. Due = pending,
--           run_at <= now + lookahead_s, and not claimed (or the claim expired); with a cursor, only
--           callbacks with (run_at, id) > (after_run_at, after_id). With a lookahead the dispatcher
--           claims ahead and waits for run_at itself, so polling adds no lateness. Each claim
--           increments attempts (the attempt number, the claim's token) and holds the callback until
--           run_at (if later than now) + lease_s * (fast_retries + 1).
-- Params:   p_dispatcher text FILL
--           p_buckets integer[] FILL
--           p_limit integer FILL
--           p_lease_s double precision DEFAULT 30 FILL
--           p_now timestamptz DEFAULT NULL FILL
--           p_lookahead_s double precision DEFAULT 0 FILL
--           p_after_run_at timestamptz DEFAULT '-infinity' FILL
--           p_after_id bigint DEFAULT 0 FILL
-- Returns:  TABLE (id bigint, attempt integer, webhook_id uuid, client_id bigint, group_key text, event_key text, run_at timestamptz, originally_run_at timestamptz, url text, context jsonb, fast_retries integer, signing_secret text, claimed_until timestamptz)
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_claim(p_dispatcher text, p_buckets integer[], p_limit integer,
    p_lease_s double precision DEFAULT 30, p_now timestamptz DEFAULT NULL,
    p_lookahead_s double precision DEFAULT 0, p_after_run_at timestamptz DEFAULT '-infinity',
    p_after_id bigint DEFAULT 0)
RETURNS TABLE (id bigint, attempt integer, webhook_id uuid, client_id bigint, group_key text,
               event_key text, run_at timestamptz, originally_run_at timestamptz, url text,
               context jsonb, fast_retries integer, signing_secret text,
               claimed_until timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog
SET enable_seqscan = off
SET enable_bitmapscan = off
SET enable_sort = off
SET jit = off
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT c.ctid FROM mbus.timer_callbacks AS c
        WHERE c.status = 'pending' AND c.run_at <= v_now + make_interval(secs => p_lookahead_s)
          AND (c.run_at, c.id) > (coalesce(p_after_run_at, '-infinity'), coalesce(p_after_id, 0))
          AND c.bucket_id = ANY (p_buckets)
          AND (c.claimed_until IS NULL OR c.claimed_until <= v_now)
        ORDER BY c.run_at, c.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), claimed AS (
        UPDATE mbus.timer_callbacks AS c
        SET attempts = c.attempts + 1, claimed_by = p_dispatcher,
            claimed_until = greatest(v_now, c.run_at)
                            + make_interval(secs => p_lease_s * (c.fast_retries + 1))
        -- the rows locked above, by their tuple ids (a TID scan, whatever the statistics
        -- say; a locked row's tuple cannot move)
        WHERE c.ctid = ANY (ARRAY(SELECT due.ctid FROM due))
        RETURNING c.*
    )
    SELECT k.id, k.attempts, k.webhook_id, k.client_id, k.group_key, k.event_key, k.run_at,
           k.originally_run_at, k.url, k.context, k.fast_retries, cl.signing_secret,
           k.claimed_until
    FROM claimed AS k JOIN mbus.timer_clients AS cl ON cl.id = k.client_id
    ORDER BY k.run_at, k.id;
END;
$$;
