CREATE OR REPLACE FUNCTION mbus.post_golden(data jsonb, headers jsonb DEFAULT NULL::jsonb, properties jsonb DEFAULT NULL::jsonb, delayed_until timestamp with time zone DEFAULT NULL::timestamp with time zone, expires timestamp with time zone DEFAULT NULL::timestamp with time zone, iid text DEFAULT NULL::text)
 RETURNS text
 LANGUAGE plpgsql
AS $function$
DECLARE
    t     mbus.qt_model;
    v_iid text;   -- stored iid: NULL when it is this queue's own '<q>.<id>@<db>'
    v_hdr jsonb;  -- stored headers: NULL when they are the default ones
BEGIN
    IF data IS NULL OR jsonb_typeof(data) <> 'object' THEN
        PERFORM mbus.check_payload('data', data, false);
    END IF;
    IF headers IS NOT NULL OR properties IS NOT NULL THEN
        PERFORM mbus.check_payload('headers', headers);
        PERFORM mbus.check_payload('properties', properties);
    END IF;
    t.id := CASE WHEN iid IS NOT NULL THEN mbus.iid_id(iid, 'golden') END;
    IF t.id IS NULL THEN
        t.id := nextval('mbus.msg_id_seq');
        v_iid := iid;
    END IF;
    t.iid := coalesce(v_iid, 'golden.' || t.id || '@' || current_database());
    t.added := now();
    t.delayed_until := delayed_until;
    t.expires := expires;
    IF headers IS NULL THEN
        t.headers := jsonb_build_object('seenby', jsonb_build_array(current_database()),
                                        'source_db', current_database(), 'destination', 'golden',
                                        'enqueue_time', t.added);
    ELSE
        t.headers := mbus.stamp_headers(headers, 'golden', t.added);
        v_hdr := t.headers;
    END IF;
    t.properties := properties;
    t.data := data;
    t.attempts := 0;

    DECLARE
        v_vt  timestamptz := coalesce(t.delayed_until, t.added);
        v_seg smallint;
    BEGIN
    IF headers IS NOT NULL AND headers ? 'consume_after' THEN
        t.consume_after := mbus.dep_list(headers -> 'consume_after');
        IF mbus.await_deps('golden', t.id, t.iid, t.consume_after) THEN
            v_vt := 'infinity';
        END IF;
    END IF;
    -- Deliveries that will wait long go to the parking segment 0 (never truncated).
    v_seg := CASE WHEN v_vt > t.added + interval '1 minute' THEN 0
                  ELSE mbus.segment_of('golden') END;
     INSERT INTO mbus.q_golden (c, vt, id, iid, added, delayed_until, expires, headers, properties, data,
                           consume_after, seg)
        VALUES (1, v_vt, t.id, v_iid, t.added, t.delayed_until,
                t.expires, v_hdr, t.properties, t.data, t.consume_after, v_seg);
    
    IF ((t.properties->>'tier') = 'gold') THEN INSERT INTO mbus.q_golden (c, vt, id, iid, added, delayed_until, expires, headers, properties, data,
                           consume_after, seg)
        VALUES (2, v_vt, t.id, v_iid, t.added, t.delayed_until,
                t.expires, v_hdr, t.properties, t.data, t.consume_after, v_seg);
    END IF;
    END;

    IF (t.data ? 'audit') THEN
        PERFORM mbus.post_golden_audit(t.data, t.headers, t.properties, t.delayed_until, t.expires);
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = 'golden') THEN
        PERFORM pg_notify('mbus_q_golden', 'golden');
    END IF;
    RETURN t.iid;
END;
$function$
