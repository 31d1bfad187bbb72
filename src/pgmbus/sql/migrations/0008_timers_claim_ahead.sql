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
-- the backlog, where the ordered index scan takes 1-2 ms; and on a table whose statistics
-- were taken in another phase (all callbacks notified, or none yet), plans that scan the
-- primary key and sort, or that join the claimed rows to a scan of the whole table (50 ms to
-- 1 s; the update now finds the locked rows by tuple id). So the per-bucket index goes (the due index INCLUDEs
-- bucket_id for per-bucket counts) and timer_claim turns off every plan shape but the ordered
-- index scan (seq scan, bitmap scan, sort) for its own statements; timer_record, which joins
-- its results to callbacks by id, gets primary-key lookups the same way.
DROP INDEX mbus.timer_callbacks_bucket;

-- JIT: the dispatcher's statements are planned as generic plans whose estimates (or the
-- disabled plan shapes above) can cross jit_above_cost; compiling then took ~300 ms of a
-- claim that runs in 2 ms. They handle at most a few thousand rows: no JIT for them.
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

-- timer_record: as in the timers migration, except that it finds its callbacks by id alone.
-- Measured with statistics taken when every callback was notified, its generic plan hashed
-- a scan of the whole due index (150 ms for 100 results) instead of 100 primary-key lookups.
CREATE OR REPLACE FUNCTION mbus.timer_record(p_results jsonb, p_now timestamptz DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
SET jit = off
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_applied integer;
BEGIN
    INSERT INTO mbus.timer_attempts AS a
        (callback_id, attempt, call, dispatcher, started_at, finished_at, outcome,
         status_code, error)
    SELECT (x->>'id')::bigint, (x->>'attempt')::integer, (k->>'call')::integer,
           x->>'dispatcher', (k->>'started_at')::timestamptz, (k->>'finished_at')::timestamptz,
           k->>'outcome', (k->>'status_code')::integer, left(k->>'error', 2000)
    FROM jsonb_array_elements(p_results) AS x, jsonb_array_elements(x->'calls') AS k
    WHERE EXISTS (SELECT FROM mbus.timer_callbacks AS t WHERE t.id = (x->>'id')::bigint)
    ON CONFLICT DO NOTHING;

    WITH r AS (
        SELECT (x->>'id')::bigint AS id, (x->>'attempt')::integer AS attempt,
               x->>'dispatcher' AS dispatcher, x->>'outcome' AS outcome,
               x->'calls'->(jsonb_array_length(x->'calls') - 1) AS last
        FROM jsonb_array_elements(p_results) AS x
    ), cur AS (
        -- only results whose claim is still current count
        SELECT c.id, c.client_id, c.group_key, c.event_key, c.run_at, r.attempt, r.last,
               CASE r.outcome WHEN 'ok' THEN 'notified' WHEN 'reject' THEN 'rejected'
                              WHEN 'refused' THEN 'failed' END AS final,
               CASE WHEN r.outcome NOT IN ('ok', 'reject', 'refused')
                    THEN mbus.timer_next_retry_at(c, v_now) END AS next
        FROM r JOIN mbus.timer_callbacks AS c
          -- "status || ''" keeps the planner off the partial due index (a scan of every
          -- pending callback when stale statistics say there are none): id lookups only
          ON c.id = r.id AND c.status || '' = 'pending' AND c.claimed_by = r.dispatcher
         AND c.attempts = r.attempt
        ORDER BY c.id
        FOR UPDATE OF c
    ), calc AS (
        SELECT cur.*, coalesce(cur.final, CASE WHEN cur.next IS NULL THEN 'failed'
                                               ELSE 'pending' END) AS new_status
        FROM cur
    ), upd AS (
        UPDATE mbus.timer_callbacks AS t SET
            status = calc.new_status,
            run_at = coalesce(calc.next, t.run_at),
            finished_at = CASE WHEN calc.new_status = 'pending' THEN NULL ELSE v_now END,
            claimed_by = NULL, claimed_until = NULL,
            last_status_code = (calc.last->>'status_code')::integer,
            last_error = left(calc.last->>'error', 2000),
            updated_at = v_now
        FROM calc WHERE t.id = calc.id
        RETURNING t.id
    ), logged AS (
        INSERT INTO mbus.timer_change_log
            (at, callback_id, client_id, group_key, event_key, action, old_status, new_status,
             changes)
        SELECT v_now, calc.id, calc.client_id, calc.group_key, calc.event_key,
               CASE WHEN calc.new_status = 'pending' THEN 'retry' ELSE 'status' END,
               'pending', calc.new_status,
               jsonb_build_object('attempt', calc.attempt)
               || CASE WHEN calc.next IS NOT NULL
                       THEN jsonb_build_object('run_at', jsonb_build_array(calc.run_at, calc.next))
                       ELSE '{}' END
        FROM calc
    )
    SELECT count(*) INTO v_applied FROM upd;
    RETURN v_applied;
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
