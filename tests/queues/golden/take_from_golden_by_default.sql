CREATE OR REPLACE FUNCTION mbus.take_from_golden_by_default(msgid text, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS SETOF mbus.qt_model
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
DECLARE
    v_id bigint := mbus.iid_id(msgid, 'golden');
    v_db text := current_database();
BEGIN
    -- A plain DELETE waits for a transaction that holds the row (the seed: take blocks).
    IF v_id IS NOT NULL THEN
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.q_golden AS q
            WHERE q.c = 1 AND q.id = v_id AND q.iid IS NULL
              AND (q.expires IS NULL
                   OR q.expires > coalesce(mbus.given_clock(p_now), clock_timestamp()))
            RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, NULL::uuid AS lease_token, NULL::timestamptz AS lease_until),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden' AND ci.iid = d.iid)
        SELECT d.* FROM d;
    ELSE
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.q_golden AS q
            WHERE q.c = 1 AND q.iid = msgid
              AND (q.expires IS NULL
                   OR q.expires > coalesce(mbus.given_clock(p_now), clock_timestamp()))
            RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts, NULL::uuid AS lease_token, NULL::timestamptz AS lease_until),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden' AND ci.iid = d.iid)
        SELECT d.* FROM d;
    END IF;
END;
$function$
