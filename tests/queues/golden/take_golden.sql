CREATE OR REPLACE FUNCTION mbus.take_golden(msgid text, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS SETOF mbus.qt_model
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
    v_id  bigint := mbus.iid_id(msgid, 'golden');
BEGIN
    IF v_id IS NOT NULL THEN
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.q_golden AS q
            WHERE q.id = v_id AND q.iid IS NULL AND (q.expires IS NULL OR q.expires > v_now)
            RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden' AND ci.iid = d.iid)
        SELECT DISTINCT ON (d.id) d.*, NULL::uuid, NULL::timestamptz FROM d ORDER BY d.id;
    ELSE
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.q_golden AS q
            WHERE q.iid = msgid AND (q.expires IS NULL OR q.expires > v_now)
              -- one message: should two pending ones share the iid, the oldest
              AND q.id = (SELECT min(x.id) FROM mbus.q_golden AS x
                          WHERE x.iid = msgid AND (x.expires IS NULL OR x.expires > v_now))
            RETURNING q.id AS id, coalesce(q.iid, 'golden.' || q.id || '@' || v_db) AS iid, q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) || jsonb_build_object('priority', q.priority) WHEN q.headers ? 'priority' THEN q.headers - 'priority' ELSE coalesce(q.headers, jsonb_build_object('enqueue_time', q.added) || (SELECT jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db, 'destination', 'golden'))) END AS headers, q.properties AS properties, q.data AS data, q.consume_after AS consume_after, q.attempts AS attempts),
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = 'golden' AND ci.iid = d.iid)
        SELECT DISTINCT ON (d.id) d.*, NULL::uuid, NULL::timestamptz FROM d ORDER BY d.id;
    END IF;
END;
$function$
