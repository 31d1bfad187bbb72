CREATE OR REPLACE FUNCTION mbus.bury_golden_secure(token uuid, reason text, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
    v_id bigint;
    v_db text := current_database();
BEGIN
    WITH d AS (
        DELETE FROM mbus.q_golden_secure AS q
        WHERE q.lease_token = token AND q.vt > coalesce(mbus.given_clock(p_now), clock_timestamp())
        RETURNING q.c AS c, q.priority AS priority, q.id AS id, coalesce(q.iid, 'golden_secure.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden_secure'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts)
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                          properties, data, consume_after, attempts, reason, priority)
    SELECT 'golden_secure', c.cname, d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers,
           d.properties, d.data, d.consume_after, d.attempts, coalesce(reason, 'buried'),
           d.priority
    FROM d LEFT JOIN mbus.consumer AS c ON c.cid = d.c
    RETURNING dmq_id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, 'golden_secure');
    END IF;
    RETURN v_id;
END;
$function$
