CREATE OR REPLACE FUNCTION mbus.lease_golden_by_default(amt integer, lease interval, max_attempts integer DEFAULT NULL::integer, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS SETOF mbus.qt_model
 LANGUAGE plpgsql
 SET enable_bitmapscan TO 'off'
 SET enable_seqscan TO 'off'
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    v_now     timestamptz := coalesce(p_now, clock_timestamp());
    v_db      text := current_database();
    v_closing smallint;
    v_due     boolean;
    v_prio    boolean;
BEGIN
    SELECT CASE WHEN s.closing_since > clock_timestamp() - interval '10 seconds' THEN s.closing END,
           s.upkept_at < clock_timestamp() - s.upkeep_every, s.prioritized
    INTO v_closing, v_due, v_prio FROM mbus.queue_segment AS s WHERE s.qname = 'golden';
    IF v_due AND pg_current_xact_id_if_assigned() IS NULL
       AND statement_timestamp() - transaction_timestamp() < interval '10 milliseconds'
       AND current_setting('transaction_isolation') = 'read committed' THEN
        PERFORM set_config('mbus.claim_upkeep', 'on', true);
        PERFORM mbus.rotate_queue('golden', 1);
        PERFORM set_config('mbus.claim_upkeep', '', true);
        SELECT CASE WHEN s.closing_since > clock_timestamp() - interval '10 seconds'
                    THEN s.closing END
        INTO v_closing FROM mbus.queue_segment AS s WHERE s.qname = 'golden';
    END IF;
    IF amt IS NULL OR amt < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'amt must be a non-negative integer';
    END IF;
    IF lease IS NULL OR lease <= '0'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'lease must be > 0';
    END IF;
    IF max_attempts IS NOT NULL AND max_attempts < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'max_attempts must be >= 1';
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.queue_pause AS p WHERE p.qname = 'golden' AND p.cname IN ('', 'default')) THEN
        RETURN;  -- paused
    END IF;
    IF v_closing IS NULL THEN
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            RETURN QUERY
            WITH s AS MATERIALIZED (
                SELECT * FROM (SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                        s.attempts >= coalesce(max_attempts, 2147483647) AS dead,
                        s.priority AS claim_prio
                 FROM mbus.q_golden AS s
                 WHERE s.c = 1 AND s.priority > 0 AND s.vt <= v_now
                   AND (s.expires IS NULL OR s.expires > v_now)
                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                 LIMIT amt
                 FOR UPDATE SKIP LOCKED) AS tier
                UNION ALL
                SELECT * FROM (SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                        s.attempts >= coalesce(max_attempts, 2147483647) AS dead,
                        s.priority AS claim_prio
                 FROM mbus.q_golden AS s
                 WHERE s.c = 1 AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)
                   AND s.priority = 0
                 ORDER BY s.vt, s.id
                 LIMIT amt
                 FOR UPDATE SKIP LOCKED) AS fifo
                LIMIT amt),
    g0 AS (
        DELETE FROM mbus."q_golden$0" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g1 AS (
        DELETE FROM mbus."q_golden$1" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g2 AS (
        DELETE FROM mbus."q_golden$2" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g3 AS (
        DELETE FROM mbus."q_golden$3" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
            buried AS (
                INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                      properties, data, consume_after, attempts, reason, priority)
                SELECT 'golden', 'default', g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                       g.properties, g.data, g.consume_after, g.attempts,
                       format('max_attempts (%s) exceeded', max_attempts), g.priority
                FROM (SELECT * FROM g0 UNION ALL SELECT * FROM g1 UNION ALL SELECT * FROM g2 UNION ALL SELECT * FROM g3) AS g),
    u0 AS (
        UPDATE mbus."q_golden$0" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u1 AS (
        UPDATE mbus."q_golden$1" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u2 AS (
        UPDATE mbus."q_golden$2" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u3 AS (
        UPDATE mbus."q_golden$3" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel)
            -- in claim order (the UPDATEs return their rows segment by segment)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
                   d.consume_after, d.attempts, d.lease_token, d.vt
            FROM (SELECT * FROM u0 UNION ALL SELECT * FROM u1 UNION ALL SELECT * FROM u2 UNION ALL SELECT * FROM u3) AS d JOIN s ON s.rel = d.rel AND s.id = d.id AND NOT s.dead
            ORDER BY s.claim_prio DESC, s.claim_vt, s.id;
        ELSE
            RETURN QUERY
            WITH s AS MATERIALIZED (
                SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                       s.attempts >= coalesce(max_attempts, 2147483647) AS dead
                FROM mbus.q_golden AS s
                WHERE s.c = 1 AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)
                ORDER BY s.vt, s.id
                LIMIT amt
                FOR UPDATE SKIP LOCKED),
    g0 AS (
        DELETE FROM mbus."q_golden$0" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g1 AS (
        DELETE FROM mbus."q_golden$1" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g2 AS (
        DELETE FROM mbus."q_golden$2" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g3 AS (
        DELETE FROM mbus."q_golden$3" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
            buried AS (
                INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                      properties, data, consume_after, attempts, reason, priority)
                SELECT 'golden', 'default', g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                       g.properties, g.data, g.consume_after, g.attempts,
                       format('max_attempts (%s) exceeded', max_attempts), g.priority
                FROM (SELECT * FROM g0 UNION ALL SELECT * FROM g1 UNION ALL SELECT * FROM g2 UNION ALL SELECT * FROM g3) AS g),
    u0 AS (
        UPDATE mbus."q_golden$0" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u1 AS (
        UPDATE mbus."q_golden$1" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u2 AS (
        UPDATE mbus."q_golden$2" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u3 AS (
        UPDATE mbus."q_golden$3" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel)
            -- in claim order (the UPDATEs return their rows segment by segment)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
                   d.consume_after, d.attempts, d.lease_token, d.vt
            FROM (SELECT * FROM u0 UNION ALL SELECT * FROM u1 UNION ALL SELECT * FROM u2 UNION ALL SELECT * FROM u3) AS d JOIN s ON s.rel = d.rel AND s.id = d.id AND NOT s.dead
            ORDER BY s.claim_vt, s.id;
        END IF;
    ELSIF v_closing = 1 THEN
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            RETURN QUERY
            WITH s AS MATERIALIZED (
                SELECT * FROM (SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                        s.attempts >= coalesce(max_attempts, 2147483647) AS dead,
                        s.priority AS claim_prio
                 FROM mbus.q_golden AS s
                 WHERE s.c = 1 AND s.priority > 0 AND s.vt <= v_now
                   AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 2, 3)
                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                 LIMIT amt
                 FOR UPDATE SKIP LOCKED) AS tier
                UNION ALL
                SELECT * FROM (SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                        s.attempts >= coalesce(max_attempts, 2147483647) AS dead,
                        s.priority AS claim_prio
                 FROM mbus.q_golden AS s
                 WHERE s.c = 1 AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)
                   AND s.priority = 0 AND s.seg IN (0, 2, 3)
                 ORDER BY s.vt, s.id
                 LIMIT amt
                 FOR UPDATE SKIP LOCKED) AS fifo
                LIMIT amt),
    g0 AS (
        DELETE FROM mbus."q_golden$0" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g2 AS (
        DELETE FROM mbus."q_golden$2" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g3 AS (
        DELETE FROM mbus."q_golden$3" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
            buried AS (
                INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                      properties, data, consume_after, attempts, reason, priority)
                SELECT 'golden', 'default', g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                       g.properties, g.data, g.consume_after, g.attempts,
                       format('max_attempts (%s) exceeded', max_attempts), g.priority
                FROM (SELECT * FROM g0 UNION ALL SELECT * FROM g2 UNION ALL SELECT * FROM g3) AS g),
    u0 AS (
        UPDATE mbus."q_golden$0" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u2 AS (
        UPDATE mbus."q_golden$2" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u3 AS (
        UPDATE mbus."q_golden$3" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel)
            -- in claim order (the UPDATEs return their rows segment by segment)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
                   d.consume_after, d.attempts, d.lease_token, d.vt
            FROM (SELECT * FROM u0 UNION ALL SELECT * FROM u2 UNION ALL SELECT * FROM u3) AS d JOIN s ON s.rel = d.rel AND s.id = d.id AND NOT s.dead
            ORDER BY s.claim_prio DESC, s.claim_vt, s.id;
        ELSE
            RETURN QUERY
            WITH s AS MATERIALIZED (
                SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                       s.attempts >= coalesce(max_attempts, 2147483647) AS dead
                FROM mbus.q_golden AS s
                WHERE s.c = 1 AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 2, 3)
                ORDER BY s.vt, s.id
                LIMIT amt
                FOR UPDATE SKIP LOCKED),
    g0 AS (
        DELETE FROM mbus."q_golden$0" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g2 AS (
        DELETE FROM mbus."q_golden$2" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g3 AS (
        DELETE FROM mbus."q_golden$3" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
            buried AS (
                INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                      properties, data, consume_after, attempts, reason, priority)
                SELECT 'golden', 'default', g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                       g.properties, g.data, g.consume_after, g.attempts,
                       format('max_attempts (%s) exceeded', max_attempts), g.priority
                FROM (SELECT * FROM g0 UNION ALL SELECT * FROM g2 UNION ALL SELECT * FROM g3) AS g),
    u0 AS (
        UPDATE mbus."q_golden$0" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u2 AS (
        UPDATE mbus."q_golden$2" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u3 AS (
        UPDATE mbus."q_golden$3" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel)
            -- in claim order (the UPDATEs return their rows segment by segment)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
                   d.consume_after, d.attempts, d.lease_token, d.vt
            FROM (SELECT * FROM u0 UNION ALL SELECT * FROM u2 UNION ALL SELECT * FROM u3) AS d JOIN s ON s.rel = d.rel AND s.id = d.id AND NOT s.dead
            ORDER BY s.claim_vt, s.id;
        END IF;
    ELSIF v_closing = 2 THEN
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            RETURN QUERY
            WITH s AS MATERIALIZED (
                SELECT * FROM (SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                        s.attempts >= coalesce(max_attempts, 2147483647) AS dead,
                        s.priority AS claim_prio
                 FROM mbus.q_golden AS s
                 WHERE s.c = 1 AND s.priority > 0 AND s.vt <= v_now
                   AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 1, 3)
                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                 LIMIT amt
                 FOR UPDATE SKIP LOCKED) AS tier
                UNION ALL
                SELECT * FROM (SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                        s.attempts >= coalesce(max_attempts, 2147483647) AS dead,
                        s.priority AS claim_prio
                 FROM mbus.q_golden AS s
                 WHERE s.c = 1 AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)
                   AND s.priority = 0 AND s.seg IN (0, 1, 3)
                 ORDER BY s.vt, s.id
                 LIMIT amt
                 FOR UPDATE SKIP LOCKED) AS fifo
                LIMIT amt),
    g0 AS (
        DELETE FROM mbus."q_golden$0" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g1 AS (
        DELETE FROM mbus."q_golden$1" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g3 AS (
        DELETE FROM mbus."q_golden$3" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
            buried AS (
                INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                      properties, data, consume_after, attempts, reason, priority)
                SELECT 'golden', 'default', g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                       g.properties, g.data, g.consume_after, g.attempts,
                       format('max_attempts (%s) exceeded', max_attempts), g.priority
                FROM (SELECT * FROM g0 UNION ALL SELECT * FROM g1 UNION ALL SELECT * FROM g3) AS g),
    u0 AS (
        UPDATE mbus."q_golden$0" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u1 AS (
        UPDATE mbus."q_golden$1" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u3 AS (
        UPDATE mbus."q_golden$3" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel)
            -- in claim order (the UPDATEs return their rows segment by segment)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
                   d.consume_after, d.attempts, d.lease_token, d.vt
            FROM (SELECT * FROM u0 UNION ALL SELECT * FROM u1 UNION ALL SELECT * FROM u3) AS d JOIN s ON s.rel = d.rel AND s.id = d.id AND NOT s.dead
            ORDER BY s.claim_prio DESC, s.claim_vt, s.id;
        ELSE
            RETURN QUERY
            WITH s AS MATERIALIZED (
                SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                       s.attempts >= coalesce(max_attempts, 2147483647) AS dead
                FROM mbus.q_golden AS s
                WHERE s.c = 1 AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 1, 3)
                ORDER BY s.vt, s.id
                LIMIT amt
                FOR UPDATE SKIP LOCKED),
    g0 AS (
        DELETE FROM mbus."q_golden$0" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g1 AS (
        DELETE FROM mbus."q_golden$1" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g3 AS (
        DELETE FROM mbus."q_golden$3" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
            buried AS (
                INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                      properties, data, consume_after, attempts, reason, priority)
                SELECT 'golden', 'default', g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                       g.properties, g.data, g.consume_after, g.attempts,
                       format('max_attempts (%s) exceeded', max_attempts), g.priority
                FROM (SELECT * FROM g0 UNION ALL SELECT * FROM g1 UNION ALL SELECT * FROM g3) AS g),
    u0 AS (
        UPDATE mbus."q_golden$0" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u1 AS (
        UPDATE mbus."q_golden$1" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u3 AS (
        UPDATE mbus."q_golden$3" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$3"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel)
            -- in claim order (the UPDATEs return their rows segment by segment)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
                   d.consume_after, d.attempts, d.lease_token, d.vt
            FROM (SELECT * FROM u0 UNION ALL SELECT * FROM u1 UNION ALL SELECT * FROM u3) AS d JOIN s ON s.rel = d.rel AND s.id = d.id AND NOT s.dead
            ORDER BY s.claim_vt, s.id;
        END IF;
    ELSE
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            RETURN QUERY
            WITH s AS MATERIALIZED (
                SELECT * FROM (SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                        s.attempts >= coalesce(max_attempts, 2147483647) AS dead,
                        s.priority AS claim_prio
                 FROM mbus.q_golden AS s
                 WHERE s.c = 1 AND s.priority > 0 AND s.vt <= v_now
                   AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 1, 2)
                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                 LIMIT amt
                 FOR UPDATE SKIP LOCKED) AS tier
                UNION ALL
                SELECT * FROM (SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                        s.attempts >= coalesce(max_attempts, 2147483647) AS dead,
                        s.priority AS claim_prio
                 FROM mbus.q_golden AS s
                 WHERE s.c = 1 AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)
                   AND s.priority = 0 AND s.seg IN (0, 1, 2)
                 ORDER BY s.vt, s.id
                 LIMIT amt
                 FOR UPDATE SKIP LOCKED) AS fifo
                LIMIT amt),
    g0 AS (
        DELETE FROM mbus."q_golden$0" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g1 AS (
        DELETE FROM mbus."q_golden$1" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g2 AS (
        DELETE FROM mbus."q_golden$2" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
            buried AS (
                INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                      properties, data, consume_after, attempts, reason, priority)
                SELECT 'golden', 'default', g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                       g.properties, g.data, g.consume_after, g.attempts,
                       format('max_attempts (%s) exceeded', max_attempts), g.priority
                FROM (SELECT * FROM g0 UNION ALL SELECT * FROM g1 UNION ALL SELECT * FROM g2) AS g),
    u0 AS (
        UPDATE mbus."q_golden$0" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u1 AS (
        UPDATE mbus."q_golden$1" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u2 AS (
        UPDATE mbus."q_golden$2" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel)
            -- in claim order (the UPDATEs return their rows segment by segment)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
                   d.consume_after, d.attempts, d.lease_token, d.vt
            FROM (SELECT * FROM u0 UNION ALL SELECT * FROM u1 UNION ALL SELECT * FROM u2) AS d JOIN s ON s.rel = d.rel AND s.id = d.id AND NOT s.dead
            ORDER BY s.claim_prio DESC, s.claim_vt, s.id;
        ELSE
            RETURN QUERY
            WITH s AS MATERIALIZED (
                SELECT s.tableoid AS rel, s.ctid AS tid, s.vt AS claim_vt, s.id AS id,
                       s.attempts >= coalesce(max_attempts, 2147483647) AS dead
                FROM mbus.q_golden AS s
                WHERE s.c = 1 AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now) AND s.seg IN (0, 1, 2)
                ORDER BY s.vt, s.id
                LIMIT amt
                FOR UPDATE SKIP LOCKED),
    g0 AS (
        DELETE FROM mbus."q_golden$0" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g1 AS (
        DELETE FROM mbus."q_golden$1" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
    g2 AS (
        DELETE FROM mbus."q_golden$2" AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.priority AS priority),
            buried AS (
                INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                      properties, data, consume_after, attempts, reason, priority)
                SELECT 'golden', 'default', g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                       g.properties, g.data, g.consume_after, g.attempts,
                       format('max_attempts (%s) exceeded', max_attempts), g.priority
                FROM (SELECT * FROM g0 UNION ALL SELECT * FROM g1 UNION ALL SELECT * FROM g2) AS g),
    u0 AS (
        UPDATE mbus."q_golden$0" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$0"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u1 AS (
        UPDATE mbus."q_golden$1" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$1"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel),
    u2 AS (
        UPDATE mbus."q_golden$2" AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = 'mbus."q_golden$2"'::regclass))
        RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, q.lease_token, q.vt, q.tableoid AS rel)
            -- in claim order (the UPDATEs return their rows segment by segment)
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
                   d.consume_after, d.attempts, d.lease_token, d.vt
            FROM (SELECT * FROM u0 UNION ALL SELECT * FROM u1 UNION ALL SELECT * FROM u2) AS d JOIN s ON s.rel = d.rel AND s.id = d.id AND NOT s.dead
            ORDER BY s.claim_vt, s.id;
        END IF;
    END IF;
END;
$function$
