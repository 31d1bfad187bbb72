CREATE OR REPLACE FUNCTION mbus.postn_golden(data jsonb[], headers jsonb[] DEFAULT NULL::jsonb[], properties jsonb[] DEFAULT NULL::jsonb[], delayed_until timestamp with time zone DEFAULT NULL::timestamp with time zone, expires timestamp with time zone DEFAULT NULL::timestamp with time zone, priority integer[] DEFAULT NULL::integer[])
 RETURNS SETOF text
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_now  timestamptz := now();
    v_db   text := current_database();
    v_h    jsonb;
    v_seg  smallint;
    v_iids text[];
BEGIN
    IF data IS NULL OR cardinality(data) = 0 THEN
        RETURN;
    END IF;
    IF expires IS NOT NULL AND (expires <= now() OR delayed_until >= expires) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = CASE WHEN expires <= now() THEN format('expires %s is in the past', expires)
                ELSE format('delayed_until %s is not before expires', delayed_until) END;
    END IF;
    -- Times from 1900 to 9998, or 'infinity' (never: a message held until taken, as the sagas'
    -- bung): -infinity, BC or far-off times would be stored, then break the client reading
    -- them back (Python's datetime ends at year 9999) after its claim had committed.
    IF delayed_until <> 'infinity'
       AND NOT (delayed_until > '1900-01-01 00:00+00' AND delayed_until < '9999-01-01 00:00+00') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format(
            'delayed_until %s is out of range (from 1900 to 9998, or infinity)', delayed_until);
    END IF;
    IF expires <> 'infinity' AND NOT expires < '9999-01-01 00:00+00' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format(
            'expires %s is out of range (from 1900 to 9998, or infinity)', expires);
    END IF;
    IF headers IS NOT NULL AND cardinality(headers) <> cardinality(data)
       OR properties IS NOT NULL AND cardinality(properties) <> cardinality(data)
       OR priority IS NOT NULL AND cardinality(priority) <> cardinality(data) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'headers, properties and priority must have as many elements as data';
    END IF;
    IF priority IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM unnest(priority) AS p(v) WHERE v < 0 OR v > 32767) THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('priority %s is not in 0..32767',
                                 (SELECT v FROM unnest(priority) AS p(v)
                                  WHERE v < 0 OR v > 32767 LIMIT 1));
        END IF;
        IF EXISTS (SELECT 1 FROM unnest(priority) AS p(v) WHERE v > 0)
           AND NOT (SELECT s.prioritized FROM mbus.queue_segment AS s WHERE s.qname = 'golden') THEN
            -- the queue's first message with a priority: claims take the priority tier from now on
            UPDATE mbus.queue_segment AS s SET prioritized = true
            WHERE s.qname = 'golden' AND NOT s.prioritized;
        END IF;
    END IF;
    -- the checks in full only when an element is off or big enough to be too deep
    IF headers IS NOT NULL OR properties IS NOT NULL
       OR EXISTS (SELECT 1 FROM unnest(data) AS d(v)
                  WHERE v IS NULL OR jsonb_typeof(v) <> 'object'
                        OR NOT mbus.json_shallow_by_size(v)) THEN
        IF EXISTS (SELECT 1 FROM unnest(data) AS d(v)
                   WHERE v IS NULL OR jsonb_typeof(v) <> 'object')
           OR EXISTS (SELECT 1 FROM unnest(headers) AS d(v) WHERE jsonb_typeof(v) <> 'object')
           OR EXISTS (SELECT 1 FROM unnest(properties) AS d(v)
                      WHERE jsonb_typeof(v) <> 'object') THEN
            RAISE EXCEPTION USING ERRCODE = 'MB005',
                MESSAGE = 'every data, headers and properties element must be a JSON object';
        END IF;
        IF EXISTS (SELECT 1 FROM unnest(data) AS d(v) WHERE mbus.json_too_deep(v))
           OR EXISTS (SELECT 1 FROM unnest(headers) AS d(v) WHERE mbus.json_too_deep(v))
           OR EXISTS (SELECT 1 FROM unnest(properties) AS d(v) WHERE mbus.json_too_deep(v)) THEN
            RAISE EXCEPTION USING ERRCODE = 'MB005',
                MESSAGE = 'a data, headers or properties element is nested more than 100 '
                          'levels deep';
        END IF;
    END IF;
    IF headers IS NOT NULL
       AND EXISTS (SELECT 1 FROM unnest(headers) AS d(v) WHERE v ? 'consume_after') THEN
        RETURN QUERY SELECT mbus.post_each('golden', data, headers, properties, delayed_until, expires,
                                           priority);
        RETURN;
    END IF;
    v_h := jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db,
                              'destination', 'golden', 'enqueue_time', v_now);
    v_seg := CASE WHEN delayed_until > v_now + interval '1 minute' THEN 0
                  ELSE coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = 'golden'),
                                1::smallint) END;
    IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = 'golden') THEN
        PERFORM pg_notify('mbus_q_golden', 'golden');
    END IF;
    BEGIN
    WITH m AS MATERIALIZED (
        SELECT u.id, 'golden.' || u.id || '@' || v_db AS iid, v_now AS added,
               delayed_until AS delayed_until, expires AS expires,
               coalesce(u.sh, v_h) AS headers, u.sh AS stored_headers,
               u.p AS properties, u.d AS data, NULL::text[] AS consume_after, 0 AS attempts,
               NULL::uuid AS lease_token, NULL::timestamptz AS lease_until, u.ord,
               coalesce(u.pr, 0)::smallint AS priority
        FROM (SELECT nextval('mbus.msg_id_seq') AS id, x.d, x.h, x.p, x.pr, x.ord,
                     CASE WHEN x.h IS NOT NULL THEN mbus.stamp_headers(x.h, 'golden', v_now) END AS sh
              FROM unnest(data, headers, properties, priority)
                   WITH ORDINALITY AS x(d, h, p, pr, ord)) AS u),
    i1 AS (
        INSERT INTO mbus.q_golden (c, vt, id, iid, added, delayed_until, expires, headers, properties,
                             data, seg, priority)
        SELECT 1, coalesce(t.delayed_until, t.added), t.id, NULL, t.added, t.delayed_until,
               t.expires, t.stored_headers, t.properties, t.data, v_seg, t.priority
        FROM m AS t WHERE true
        RETURNING nextval('mbus."q_golden$c1$posted"')),
    i2 AS (
        INSERT INTO mbus.q_golden (c, vt, id, iid, added, delayed_until, expires, headers, properties,
                             data, seg, priority)
        SELECT 2, coalesce(t.delayed_until, t.added), t.id, NULL, t.added, t.delayed_until,
               t.expires, t.stored_headers, t.properties, t.data, v_seg, t.priority
        FROM m AS t WHERE ((t.properties->>'tier') = 'gold')
        RETURNING nextval('mbus."q_golden$c2$posted"')),
    g_golden_audit AS (
        SELECT count(mbus.post_golden_audit(t.data, t.headers, t.properties, t.delayed_until, t.expires,
                             priority => t.priority)) AS n
        FROM m AS t WHERE (t.data ? 'audit'))
    SELECT array_agg(m.iid ORDER BY m.ord) INTO v_iids FROM m, (SELECT 0 + (SELECT g_golden_audit.n FROM g_golden_audit) AS n) AS fired WHERE fired.n IS NOT NULL;
    -- counter: messages posted to the queue (after the statement, so a batch that falls back
    -- to post_each is not counted twice). Over unnest(data), not generate_series(1,
    -- cardinality(data)): the generic plan of the latter guesses 1,000 rows, so PostgreSQL kept
    -- planning it again for every batch (14 us per call); unnest's guess is 10 rows.
    PERFORM nextval('mbus."q_golden$posted"') FROM unnest(data);
    EXCEPTION WHEN OTHERS THEN
        RETURN QUERY SELECT mbus.post_each('golden', data, headers, properties, delayed_until, expires,
                                           priority);
        RETURN;
    END;
    RETURN QUERY SELECT unnest(v_iids);
END;
$function$
