CREATE OR REPLACE FUNCTION mbus.consumen_golden_secure_by_default(amt integer, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS SETOF mbus.qt_model
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
    v_now     timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db      text := current_database();
    v_closing smallint;
    v_due     boolean;
    v_prio    boolean;
    v_paused  boolean;
    v_floor   timestamptz;  -- the claim floor
    v_n       bigint;    -- counter: deliveries consumed
    v_ids     bigint[];  -- the claimed messages, in claim order
    v_t0      tid[];     -- their ctids in segment 0, 1, 2, 3
    v_t1      tid[];
    v_t2      tid[];
    v_t3      tid[];
    v_rows    mbus.qt_model[];
BEGIN
    IF amt IS NULL OR amt < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'amt must be a non-negative integer';
    END IF;
    SELECT CASE WHEN s.closing_since > clock_timestamp() - interval '10 seconds' THEN s.closing END,
           s.upkept_at < clock_timestamp() - s.upkeep_every, s.prioritized,
           EXISTS (SELECT 1 FROM mbus.queue_pause AS p WHERE p.qname = 'golden_secure' AND p.cname IN ('', 'default'))
    INTO v_closing, v_due, v_prio, v_paused
    FROM (VALUES (1)) AS one (x) LEFT JOIN mbus.queue_segment AS s ON s.qname = 'golden_secure';
    IF v_due AND pg_current_xact_id_if_assigned() IS NULL
       AND statement_timestamp() - transaction_timestamp() < interval '10 milliseconds'
       AND current_setting('transaction_isolation') = 'read committed' THEN
        PERFORM set_config('mbus.claim_upkeep', 'on', true);
        PERFORM mbus.rotate_queue('golden_secure', 1);
        PERFORM set_config('mbus.claim_upkeep', '', true);
        SELECT CASE WHEN s.closing_since > clock_timestamp() - interval '10 seconds'
                    THEN s.closing END
        INTO v_closing FROM mbus.queue_segment AS s WHERE s.qname = 'golden_secure';
    END IF;
    IF v_paused THEN
        RETURN;  -- paused
    END IF;
    -- The claim floor (mbus.floor_guard): no live delivery lies below it, so the FIFO scan
    -- starts there, past the consumed entries a held xmin horizon keeps.
    v_floor := coalesce(to_timestamp(0)
                        + pg_sequence_last_value('mbus."q_golden_secure$floor"'::regclass) * interval '1 microsecond',
                        '-infinity');
    IF v_closing IS NULL THEN
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT array_agg(x.id ORDER BY x.claim_prio DESC, x.claim_vt, x.id),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval('mbus."q_golden_secure$c4$consumed"'))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n
            FROM (SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio
                                 FROM mbus.q_golden_secure AS s
                                 WHERE s.c = 4 AND s.priority > 0 AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now)
                                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                                 LIMIT amt
                                 FOR UPDATE SKIP LOCKED) AS tier
                  UNION ALL
                  SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio
                                 FROM mbus.q_golden_secure AS s
                                 WHERE s.c = 4 AND s.vt >= v_floor AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now)
                                   AND s.priority = 0
                                 ORDER BY s.vt, s.id
                                 LIMIT amt
                                 FOR UPDATE SKIP LOCKED) AS fifo
                  LIMIT amt) AS x;
        ELSE
            SELECT array_agg(x.id ORDER BY x.claim_vt, x.id),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval('mbus."q_golden_secure$c4$consumed"'))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n
            FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt
                  FROM mbus.q_golden_secure AS s
                  WHERE s.c = 4 AND s.vt >= v_floor AND s.vt <= v_now
                    AND (s.expires IS NULL OR s.expires > v_now)
                  ORDER BY s.vt, s.id
                  LIMIT amt
                  FOR UPDATE SKIP LOCKED) AS x;
        END IF;
    ELSIF v_closing = 1 THEN
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT array_agg(x.id ORDER BY x.claim_prio DESC, x.claim_vt, x.id),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval('mbus."q_golden_secure$c4$consumed"'))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n
            FROM (SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio
                                 FROM mbus.q_golden_secure AS s
                                 WHERE s.c = 4 AND s.priority > 0 AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 2, 3)
                                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                                 LIMIT amt
                                 FOR UPDATE SKIP LOCKED) AS tier
                  UNION ALL
                  SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio
                                 FROM mbus.q_golden_secure AS s
                                 WHERE s.c = 4 AND s.vt >= v_floor AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now)
                                   AND s.priority = 0 AND s.seg IN (0, 2, 3)
                                 ORDER BY s.vt, s.id
                                 LIMIT amt
                                 FOR UPDATE SKIP LOCKED) AS fifo
                  LIMIT amt) AS x;
        ELSE
            SELECT array_agg(x.id ORDER BY x.claim_vt, x.id),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval('mbus."q_golden_secure$c4$consumed"'))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n
            FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt
                  FROM mbus.q_golden_secure AS s
                  WHERE s.c = 4 AND s.vt >= v_floor AND s.vt <= v_now
                    AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 2, 3)
                  ORDER BY s.vt, s.id
                  LIMIT amt
                  FOR UPDATE SKIP LOCKED) AS x;
        END IF;
    ELSIF v_closing = 2 THEN
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT array_agg(x.id ORDER BY x.claim_prio DESC, x.claim_vt, x.id),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval('mbus."q_golden_secure$c4$consumed"'))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n
            FROM (SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio
                                 FROM mbus.q_golden_secure AS s
                                 WHERE s.c = 4 AND s.priority > 0 AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 1, 3)
                                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                                 LIMIT amt
                                 FOR UPDATE SKIP LOCKED) AS tier
                  UNION ALL
                  SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio
                                 FROM mbus.q_golden_secure AS s
                                 WHERE s.c = 4 AND s.vt >= v_floor AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now)
                                   AND s.priority = 0 AND s.seg IN (0, 1, 3)
                                 ORDER BY s.vt, s.id
                                 LIMIT amt
                                 FOR UPDATE SKIP LOCKED) AS fifo
                  LIMIT amt) AS x;
        ELSE
            SELECT array_agg(x.id ORDER BY x.claim_vt, x.id),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval('mbus."q_golden_secure$c4$consumed"'))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n
            FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt
                  FROM mbus.q_golden_secure AS s
                  WHERE s.c = 4 AND s.vt >= v_floor AND s.vt <= v_now
                    AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 1, 3)
                  ORDER BY s.vt, s.id
                  LIMIT amt
                  FOR UPDATE SKIP LOCKED) AS x;
        END IF;
    ELSE
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT array_agg(x.id ORDER BY x.claim_prio DESC, x.claim_vt, x.id),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval('mbus."q_golden_secure$c4$consumed"'))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n
            FROM (SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio
                                 FROM mbus.q_golden_secure AS s
                                 WHERE s.c = 4 AND s.priority > 0 AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 1, 2)
                                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                                 LIMIT amt
                                 FOR UPDATE SKIP LOCKED) AS tier
                  UNION ALL
                  SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio
                                 FROM mbus.q_golden_secure AS s
                                 WHERE s.c = 4 AND s.vt >= v_floor AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now)
                                   AND s.priority = 0 AND s.seg IN (0, 1, 2)
                                 ORDER BY s.vt, s.id
                                 LIMIT amt
                                 FOR UPDATE SKIP LOCKED) AS fifo
                  LIMIT amt) AS x;
        ELSE
            SELECT array_agg(x.id ORDER BY x.claim_vt, x.id),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval('mbus."q_golden_secure$c4$consumed"'))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n
            FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt
                  FROM mbus.q_golden_secure AS s
                  WHERE s.c = 4 AND s.vt >= v_floor AND s.vt <= v_now
                    AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 1, 2)
                  ORDER BY s.vt, s.id
                  LIMIT amt
                  FOR UPDATE SKIP LOCKED) AS x;
        END IF;
    END IF;
    IF v_ids IS NULL THEN
        RETURN;  -- nothing to claim
    END IF;
    -- The TID scans delete in physical order: the rows go back in claim order.
    IF num_nonnulls(v_t0, v_t1, v_t2, v_t3) = 1 THEN
        IF v_t0 IS NOT NULL THEN
            RETURN QUERY
            WITH d AS (DELETE FROM mbus."q_golden_secure$0" AS q WHERE q.ctid = ANY (v_t0)
                       RETURNING q.vt AS claim_vt, q.priority AS claim_prio, q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden_secure' AND ci.iid = d.iid)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties,
                   d.data, d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
            FROM d ORDER BY d.claim_prio DESC, d.claim_vt, d.id;
        ELSIF v_t1 IS NOT NULL THEN
            RETURN QUERY
            WITH d AS (DELETE FROM mbus."q_golden_secure$1" AS q WHERE q.ctid = ANY (v_t1)
                       RETURNING q.vt AS claim_vt, q.priority AS claim_prio, q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden_secure' AND ci.iid = d.iid)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties,
                   d.data, d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
            FROM d ORDER BY d.claim_prio DESC, d.claim_vt, d.id;
        ELSIF v_t2 IS NOT NULL THEN
            RETURN QUERY
            WITH d AS (DELETE FROM mbus."q_golden_secure$2" AS q WHERE q.ctid = ANY (v_t2)
                       RETURNING q.vt AS claim_vt, q.priority AS claim_prio, q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden_secure' AND ci.iid = d.iid)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties,
                   d.data, d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
            FROM d ORDER BY d.claim_prio DESC, d.claim_vt, d.id;
        ELSIF v_t3 IS NOT NULL THEN
            RETURN QUERY
            WITH d AS (DELETE FROM mbus."q_golden_secure$3" AS q WHERE q.ctid = ANY (v_t3)
                       RETURNING q.vt AS claim_vt, q.priority AS claim_prio, q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden_secure' AND ci.iid = d.iid)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties,
                   d.data, d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
            FROM d ORDER BY d.claim_prio DESC, d.claim_vt, d.id;
        END IF;
    ELSE
        IF v_t0 IS NOT NULL THEN
            WITH d AS (DELETE FROM mbus."q_golden_secure$0" AS q WHERE q.ctid = ANY (v_t0)
                       RETURNING q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, NULL::uuid AS lease_token,
                                 NULL::timestamptz AS lease_until),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden_secure' AND ci.iid = d.iid)
            SELECT v_rows || array_agg(d::mbus.qt_model) INTO v_rows FROM d;
        END IF;
        IF v_t1 IS NOT NULL THEN
            WITH d AS (DELETE FROM mbus."q_golden_secure$1" AS q WHERE q.ctid = ANY (v_t1)
                       RETURNING q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, NULL::uuid AS lease_token,
                                 NULL::timestamptz AS lease_until),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden_secure' AND ci.iid = d.iid)
            SELECT v_rows || array_agg(d::mbus.qt_model) INTO v_rows FROM d;
        END IF;
        IF v_t2 IS NOT NULL THEN
            WITH d AS (DELETE FROM mbus."q_golden_secure$2" AS q WHERE q.ctid = ANY (v_t2)
                       RETURNING q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, NULL::uuid AS lease_token,
                                 NULL::timestamptz AS lease_until),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden_secure' AND ci.iid = d.iid)
            SELECT v_rows || array_agg(d::mbus.qt_model) INTO v_rows FROM d;
        END IF;
        IF v_t3 IS NOT NULL THEN
            WITH d AS (DELETE FROM mbus."q_golden_secure$3" AS q WHERE q.ctid = ANY (v_t3)
                       RETURNING q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, NULL::uuid AS lease_token,
                                 NULL::timestamptz AS lease_until),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden_secure' AND ci.iid = d.iid)
            SELECT v_rows || array_agg(d::mbus.qt_model) INTO v_rows FROM d;
        END IF;
        RETURN QUERY SELECT r.* FROM unnest(v_rows) AS r
            JOIN unnest(v_ids) WITH ORDINALITY AS o(id, ord) ON o.id = r.id ORDER BY o.ord;
    END IF;
END;
$function$
