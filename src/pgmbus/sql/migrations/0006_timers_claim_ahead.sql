-- timers: claims that start after a cursor, so a dispatcher claiming ahead does not rescan
-- the callbacks it already holds.
--
-- A dispatcher claims callbacks due within its lookahead (about a second) and fires them at
-- their run_at. Claimed callbacks stay 'pending' (and in timer_callbacks_due) until their
-- result is recorded, so a claim that starts at the head of the index walks over every one
-- of them, several times a second: at 2,000 callbacks per second most of the database's
-- work was that walk. timer_claim now takes an optional cursor (p_after_run_at, p_after_id):
-- only callbacks after it in (run_at, id) order are considered, an index range scan that
-- starts where the last claim ended. The dispatcher still makes a claim without a cursor
-- every rescan interval (half a second by default), which finds what a cursor cannot:
-- callbacks committed late by concurrent transactions, inserted with a run_at in the past,
-- retried sooner than the cursor, skipped while locked, or whose claim expired. So the
-- cursor is only a shortcut; correctness never depends on it (no watermark, no global lock).
--
-- The claim must walk timer_callbacks_due in (run_at, id) order and stop after p_limit rows.
-- Measured in the bench, the cached generic plan often chose a bitmap scan of the per-bucket
-- index instead (every due row of the buckets, then a sort): 10-500 ms per claim, rising with
-- the backlog, where the ordered index scan takes 1-2 ms. So the per-bucket index goes (the
-- due index INCLUDEs bucket_id for per-bucket counts) and timer_claim turns off the plan
-- shapes that read the whole due range (seq scan, bitmap scan) for its own statements.
DROP INDEX mbus.timer_callbacks_bucket;

-- JIT: the dispatcher's statements are planned as generic plans whose estimates (or the
-- disabled plan shapes above) can cross jit_above_cost; compiling then took ~300 ms of a
-- claim that runs in 2 ms. They handle at most a few thousand rows: no JIT for them.
ALTER FUNCTION mbus.timer_record(jsonb, timestamptz) SET jit = off;
ALTER FUNCTION mbus.timer_create_many(jsonb, timestamptz) SET jit = off;

DROP FUNCTION mbus.timer_claim(text, integer[], integer, double precision, timestamptz,
                               double precision);

-- timer_claim(dispatcher, buckets, limit, lease_s, now, lookahead_s, after_run_at, after_id):
-- claim up to limit due callbacks of the given buckets in (run_at, id) order. Due = pending,
-- run_at <= now + lookahead_s, and not claimed (or the claim expired); with a cursor, only
-- callbacks with (run_at, id) > (after_run_at, after_id). With a lookahead the dispatcher
-- claims ahead and waits for run_at itself, so polling adds no lateness. Each claim
-- increments attempts (the attempt number, the claim's token) and holds the callback until
-- run_at (if later than now) + lease_s * (fast_retries + 1).
CREATE FUNCTION mbus.timer_claim(p_dispatcher text, p_buckets integer[], p_limit integer,
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
SET jit = off
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT c.id FROM mbus.timer_callbacks AS c
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
        FROM due WHERE c.id = due.id
        RETURNING c.*
    )
    SELECT k.id, k.attempts, k.webhook_id, k.client_id, k.group_key, k.event_key, k.run_at,
           k.originally_run_at, k.url, k.context, k.fast_retries, cl.signing_secret,
           k.claimed_until
    FROM claimed AS k JOIN mbus.timer_clients AS cl ON cl.id = k.client_id
    ORDER BY k.run_at, k.id;
END;
$$;

-- timer_unclaim(dispatcher, ids, attempts): give back claims that were never called. A
-- dispatcher that could not start a call while a full timeout of its claim was left (it was
-- overloaded), or that stops with callbacks claimed ahead, hands them back at once instead
-- of letting the claim expire (which delays them by the claim's length). The attempt number
-- is given back too: nobody was called with it. Only the claim's own dispatcher and attempt
-- match, so a claim that already expired and was taken by another dispatcher is untouched.
-- Returns the number of claims given back.
CREATE FUNCTION mbus.timer_unclaim(p_dispatcher text, p_ids bigint[], p_attempts integer[])
RETURNS integer
LANGUAGE sql
SET search_path = pg_catalog
SET jit = off
AS $$
    WITH r AS (
        SELECT u.id, u.attempt FROM unnest(p_ids, p_attempts) AS u(id, attempt)
    ), given AS (
        UPDATE mbus.timer_callbacks AS c
        SET attempts = c.attempts - 1, claimed_by = NULL, claimed_until = NULL
        FROM r
        WHERE c.id = r.id AND c.attempts = r.attempt AND c.claimed_by = p_dispatcher
          AND c.status = 'pending'
        RETURNING c.id
    )
    SELECT count(*)::integer FROM given;
$$;

-- PUBLIC may execute none of the timer functions (see 0001's restrict_public_execute).
SELECT mbus.restrict_public_execute();
