-- Function: mbus.timer_claim(p_dispatcher, p_buckets, p_limit, p_lease_s, p_now, ...)
--
-- Purpose:  Claim up to p_limit due callbacks of the given buckets for one dispatcher, a fair
--           share per client (with n clients having claimable callbacks, up to p_limit / n each,
--           one more for p_limit % n of them in turns; a share not filled is not handed on), in
--           (run_at, id) order. Due = pending, run_at <= now + p_lookahead_s, not claimed or the
--           claim expired. Each claim increments attempts (its token for mbus.timer_record and
--           timer_unclaim) and holds the callback until greatest(now, run_at) + p_lease_s *
--           (fast_retries + 1). The cursor (p_after_run_at, p_after_id) is a shortcut only: the
--           dispatcher also claims without it every rescan interval. Every row it locks it claims.
-- Params:   p_dispatcher    the claiming dispatcher's id (text), stored in claimed_by
--           p_buckets       the bucket ids whose callbacks it may claim (integer[]; its leases)
--           p_limit         at most this many callbacks (integer)
--           p_lease_s       the claim's length per call in seconds (default 30)
--           p_now           the clock (NULL = now()); tests move it
--           p_lookahead_s   claim callbacks due up to this many seconds ahead (default 0)
--           p_after_run_at  the cursor's run_at (NULL or '-infinity' = no cursor)
--           p_after_id      the cursor's callback id (NULL or 0 = no cursor); the cursor
--                           applies to each client's range
--           p_skip_clients  client ids not to claim for (bigint[], default none): the
--                           dispatcher already holds as many of their callbacks as it lets
--                           one client have
-- Returns:  TABLE of the claimed callbacks in (run_at, id) order: id, attempt, webhook_id,
--           client_id, group_key, event_key, run_at, originally_run_at, url, context,
--           fast_retries, the client's signing_secret, claimed_until; no row when none is due
-- Locks:    row locks FOR UPDATE SKIP LOCKED on the due mbus.timer_callbacks rows it takes (rows
--           locked by others are skipped, never waited for), then UPDATE of exactly those
--           rows (each row it locks, it claims and returns); held to commit
-- Calls:    mbus.given_clock
-- Tables:   mbus.timer_callbacks, mbus.timer_clients
-- Design:   docs/DESIGN.md#timer_claim-fair-shares-a-cursor-and-a-pinned-plan
CREATE OR REPLACE FUNCTION mbus.timer_claim(p_dispatcher text, p_buckets integer[], p_limit integer,
    p_lease_s double precision DEFAULT 30, p_now timestamptz DEFAULT NULL,
    p_lookahead_s double precision DEFAULT 0, p_after_run_at timestamptz DEFAULT '-infinity',
    p_after_id bigint DEFAULT 0, p_skip_clients bigint[] DEFAULT '{}')
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
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
    v_horizon timestamptz := v_now + make_interval(secs => p_lookahead_s);
    v_after_run_at timestamptz := coalesce(p_after_run_at, '-infinity');
    v_after_id bigint := coalesce(p_after_id, 0);
    v_clients bigint[];
    v_n integer;
    v_first integer;
BEGIN
    -- the clients with a claimable callback: one index probe each
    v_clients := ARRAY(
        SELECT cl.id FROM mbus.timer_clients AS cl
        WHERE cl.id <> ALL (coalesce(p_skip_clients, '{}'))
          AND EXISTS (
              SELECT FROM mbus.timer_callbacks AS c
              WHERE c.client_id = cl.id AND c.status = 'pending' AND c.run_at <= v_horizon
                AND (c.run_at, c.id) > (v_after_run_at, v_after_id)
                AND c.bucket_id = ANY (p_buckets)
                AND (c.claimed_until IS NULL OR c.claimed_until <= v_now))
        ORDER BY cl.id);
    v_n := cardinality(v_clients);
    IF v_n = 0 OR p_limit <= 0 THEN
        RETURN;
    END IF;
    -- shares add up to p_limit exactly (every row locked is claimed): the first
    -- p_limit % n clients in turn get one more; the turn moves with the clock, so with more
    -- clients than p_limit none is left out every time
    v_first := (floor(extract(epoch FROM v_now) * 1000)::bigint % v_n)::integer;
    RETURN QUERY
    WITH due AS (
        SELECT p.id FROM unnest(v_clients) WITH ORDINALITY AS u(client_id, k)
        CROSS JOIN LATERAL (
            SELECT c.id FROM mbus.timer_callbacks AS c
            WHERE c.client_id = u.client_id AND c.status = 'pending'
              AND c.run_at <= v_horizon
              AND (c.run_at, c.id) > (v_after_run_at, v_after_id)
              AND c.bucket_id = ANY (p_buckets)
              AND (c.claimed_until IS NULL OR c.claimed_until <= v_now)
            ORDER BY c.run_at, c.id
            LIMIT p_limit / v_n
                  + CASE WHEN ((u.k - 1 - v_first + v_n) % v_n) < p_limit % v_n
                         THEN 1 ELSE 0 END
            FOR UPDATE SKIP LOCKED
        ) AS p
    ), claimed AS (
        UPDATE mbus.timer_callbacks AS c
        SET attempts = c.attempts + 1, claimed_by = p_dispatcher,
            claimed_until = greatest(v_now, c.run_at)
                            + make_interval(secs => p_lease_s * (c.fast_retries + 1))
        -- the rows locked above, by id (a primary-key scan): the UPDATE follows each to the
        -- version locked above, even one committed after this statement's snapshot
        WHERE c.id = ANY (ARRAY(SELECT due.id FROM due))
        RETURNING c.*
    )
    SELECT k.id, k.attempts, k.webhook_id, k.client_id, k.group_key, k.event_key, k.run_at,
           k.originally_run_at, k.url, k.context, k.fast_retries, cl.signing_secret,
           k.claimed_until
    FROM claimed AS k JOIN mbus.timer_clients AS cl ON cl.id = k.client_id
    ORDER BY k.run_at, k.id;
END;
$$;
