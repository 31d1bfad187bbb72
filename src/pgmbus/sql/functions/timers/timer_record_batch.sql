-- Function: mbus.timer_record_batch(p_results, p_now)
--
-- Purpose:  The set-based recording of delivery results, one statement per table: what
--           mbus.timer_record was before per-result isolation (its body, unchanged). Every call
--           of every result is kept in mbus.timer_attempts; a result is applied only while its
--           claim is current (same dispatcher, same attempt, still pending). By outcome: ok ->
--           'notified'; reject -> 'rejected'; refused -> 'failed'; error -> pending again at
--           mbus.timer_next_retry_at, or 'failed' when out of time. Plan settings as
--           timer_record's (primary-key lookups only, no JIT).
-- Params:   p_results, p_now  as mbus.timer_record
-- Returns:  integer: the number of results applied
-- Locks:    as mbus.timer_record
-- Calls:    mbus.given_clock, mbus.timer_next_retry_at
-- Tables:   mbus.timer_attempts, mbus.timer_callbacks, mbus.timer_change_log
CREATE OR REPLACE FUNCTION mbus.timer_record_batch(p_results jsonb, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
SET jit = off
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
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
