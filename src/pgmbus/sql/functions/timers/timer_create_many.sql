-- Function: mbus.timer_create_many(p_items, p_now)
--
-- Purpose:  Create callbacks in one statement (the HTTP API's batches, schedule occurrences),
--           idempotent on (client_id, group_key, event_key): an existing callback, or a key
--           repeated in the batch, is returned unchanged with created = false. Every item is
--           checked first (mbus.timer_item_problem): MB006 with the reason, prefixed 'item <n>: '
--           in a batch of several, nothing created; a client or schedule_id that does not exist:
--           MB002, same prefix. Defaults: retry policy merged, originally_run_at = run_at,
--           context '{}', stop_after_delay_s 86400. Each created callback gets a 'create' row in
--           the change log. Returns one row per item, in item order.
-- Params:   p_items  a JSON array of objects {client_id, group_key, event_key, run_at, url,
--                    context?, retry?, stop_after_delay_s?, originally_run_at?, schedule_id?}
--                    (MB005 when it is not an array)
--           p_now    the clock (NULL = now()): created_at, updated_at and the log's time
-- Returns:  TABLE (ord integer, created boolean, callback jsonb): one row per item in item
--           order (ord from 1); callback is mbus.timer_callback_json of the callback
-- Locks:    inserts the new mbus.timer_callbacks and change log rows; an item whose key a
--           concurrent transaction is inserting waits for it (ON CONFLICT on the unique key)
-- Calls:    mbus.given_clock, mbus.timer_callback_json, mbus.timer_item_problem, mbus.timer_limits,
--           mbus.timer_retry_merge
-- Tables:   mbus.timer_buckets, mbus.timer_callbacks, mbus.timer_change_log, mbus.timer_clients,
--           mbus.timer_schedules
-- Design:   docs/DESIGN.md#timer_create_many-buckets-and-jit
CREATE OR REPLACE FUNCTION mbus.timer_create_many(p_items jsonb, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (ord integer, created boolean, callback jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog
SET jit = off
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
    v_buckets integer;
    v_new bigint[];
    v_limits jsonb := mbus.timer_limits();
    v_bad bigint;
    v_problem text;
BEGIN
    IF jsonb_typeof(p_items) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'items must be a JSON array';
    END IF;
    SELECT t.n, p.problem INTO v_bad, v_problem
    FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
    CROSS JOIN LATERAL (SELECT mbus.timer_item_problem(t.i, v_limits) AS problem) AS p
    WHERE p.problem IS NOT NULL
    ORDER BY t.n
    LIMIT 1;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = CASE WHEN jsonb_array_length(p_items) = 1 THEN v_problem
                           ELSE format('item %s: %s', v_bad, v_problem) END;
    END IF;
    SELECT count(*) INTO v_buckets FROM mbus.timer_buckets;
    -- A client or schedule that does not exist is found only when the foreign key refuses it
    -- (23503, naming a constraint), then named here: MB002. Checked before the INSERT, the two
    -- index probes made creating one timer ~9 % slower (pgbench, 1 client); this block's
    -- subtransaction costs less, and nothing per item.
    BEGIN
        -- Materialised: inlined, each use of i.retry below evaluated timer_retry_merge again
        -- (five calls per item).
        WITH items AS MATERIALIZED (
            SELECT t.n::integer AS n,
                   (t.i->>'client_id')::bigint AS client_id,
                   t.i->>'group_key' AS group_key,
                   t.i->>'event_key' AS event_key,
                   (t.i->>'run_at')::timestamptz AS run_at,
                   coalesce((t.i->>'originally_run_at')::timestamptz,
                            (t.i->>'run_at')::timestamptz) AS originally_run_at,
                   t.i->>'url' AS url,
                   coalesce(nullif(t.i->'context', 'null'), '{}') AS context,
                   mbus.timer_retry_merge(t.i->'retry') AS retry,  -- checked above
                   coalesce((t.i->>'stop_after_delay_s')::float8, 86400) AS stop_after_delay_s,
                   (t.i->>'schedule_id')::bigint AS schedule_id
            FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
        ), ins AS (
            INSERT INTO mbus.timer_callbacks AS c (
                client_id, group_key, event_key, run_at, originally_run_at, url, context,
                fast_retries, retry_kind, retry_delay_s, retry_factor, retry_max_delay_s,
                stop_after_delay_s, bucket_id, schedule_id, created_at, updated_at)
            SELECT DISTINCT ON (i.client_id, i.group_key, i.event_key)
                   i.client_id, i.group_key, i.event_key, i.run_at, i.originally_run_at, i.url,
                   i.context, (i.retry->>'fast_retries')::numeric::integer, i.retry->>'kind',
                   (i.retry->>'delay_s')::float8, (i.retry->>'factor')::float8,
                   (i.retry->>'max_delay_s')::float8, i.stop_after_delay_s,
                   (abs(hashtextextended(i.group_key || '/' || i.event_key, i.client_id))
                    % v_buckets)::integer,
                   i.schedule_id, v_now, v_now
            FROM items AS i
            ORDER BY i.client_id, i.group_key, i.event_key, i.n
            ON CONFLICT (client_id, group_key, event_key) DO NOTHING
            RETURNING c.id, c.client_id, c.group_key, c.event_key
        ), logged AS (
            INSERT INTO mbus.timer_change_log
                (at, callback_id, client_id, group_key, event_key, action, new_status)
            SELECT v_now, ins.id, ins.client_id, ins.group_key, ins.event_key, 'create', 'pending'
            FROM ins
        )
        SELECT array_agg(ins.id) INTO v_new FROM ins;
    EXCEPTION WHEN foreign_key_violation THEN
        SELECT t.n, CASE WHEN NOT EXISTS (SELECT FROM mbus.timer_clients AS k
                                          WHERE k.id = (t.i->>'client_id')::bigint)
                         THEN format('timer client %s does not exist', t.i->>'client_id')
                         ELSE format('schedule %s does not exist', t.i->>'schedule_id') END
        INTO v_bad, v_problem
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
        WHERE NOT EXISTS (SELECT FROM mbus.timer_clients AS k
                          WHERE k.id = (t.i->>'client_id')::bigint)
           OR NOT EXISTS (SELECT FROM mbus.timer_schedules AS s
                          WHERE s.id = (t.i->>'schedule_id')::bigint)
              AND t.i->>'schedule_id' IS NOT NULL
        ORDER BY t.n
        LIMIT 1;
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = CASE WHEN v_problem IS NULL THEN 'a timer client or schedule was deleted'
                           WHEN jsonb_array_length(p_items) = 1 THEN v_problem
                           ELSE format('item %s: %s', v_bad, v_problem) END;
    END;

    RETURN QUERY
    WITH items AS (
        SELECT t.n::integer AS n, (t.i->>'client_id')::bigint AS client_id,
               t.i->>'group_key' AS group_key, t.i->>'event_key' AS event_key
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
    )
    -- One key lookup per item (LATERAL): joined instead, the planner, expecting 100 items
    -- from jsonb_array_elements, hashed the whole of timer_callbacks for a single timer, so
    -- creating one cost O(timers stored): 2.5 ms with 2,800 timers.
    SELECT i.n,
           x.id = ANY (coalesce(v_new, '{}'))
               AND i.n = min(i.n) OVER (PARTITION BY i.client_id, i.group_key, i.event_key),
           x.callback
    FROM items AS i
    CROSS JOIN LATERAL (
        SELECT c.id, mbus.timer_callback_json(c) AS callback
        FROM mbus.timer_callbacks AS c
        WHERE c.client_id = i.client_id AND c.group_key = i.group_key
          AND c.event_key = i.event_key
        LIMIT 1) AS x  -- the key is unique; the LIMIT keeps the lookup from becoming a join
    ORDER BY i.n;
END;
$$;
