CREATE OR REPLACE FUNCTION mbus.postn_golden_secure(data jsonb[], headers jsonb[] DEFAULT NULL::jsonb[], properties jsonb[] DEFAULT NULL::jsonb[], delayed_until timestamp with time zone DEFAULT NULL::timestamp with time zone, expires timestamp with time zone DEFAULT NULL::timestamp with time zone, priority integer[] DEFAULT NULL::integer[])
 RETURNS SETOF text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
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
           AND NOT (SELECT s.prioritized FROM mbus.queue_segment AS s WHERE s.qname = 'golden_secure') THEN
            -- the queue's first message with a priority: claims take the priority tier from now on
            UPDATE mbus.queue_segment AS s SET prioritized = true
            WHERE s.qname = 'golden_secure' AND NOT s.prioritized;
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
        RETURN QUERY SELECT mbus.post_each('golden_secure', data, headers, properties, delayed_until, expires,
                                           priority);
        RETURN;
    END IF;
    v_seg := CASE WHEN delayed_until > v_now + interval '1 minute' THEN 0
                  ELSE coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = 'golden_secure'),
                                1::smallint) END;
    IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = 'golden_secure') THEN
        PERFORM pg_notify('mbus_q_golden_secure', 'golden_secure');
    END IF;
    -- one consumer taking every message, no trigger: one INSERT; its RETURNING bumps both
    -- counters, and the ids, taken in the order of data, give the iids back in that order
    RETURN QUERY
    WITH i AS (
        INSERT INTO mbus.q_golden_secure AS q (c, vt, id, added, delayed_until, expires, headers, properties,
                                data, seg, priority)
        SELECT 4, coalesce(delayed_until, v_now), nextval('mbus.msg_id_seq'), v_now,
               delayed_until, expires,
               CASE WHEN x.h IS NOT NULL THEN mbus.stamp_headers(x.h, 'golden_secure', v_now) END,
               x.p, x.d, v_seg, coalesce(x.pr, 0)::smallint
        FROM unnest(data, headers, properties, priority) AS x (d, h, p, pr)
        RETURNING q.id, nextval('mbus."q_golden_secure$c4$posted"') AS n, nextval('mbus."q_golden_secure$posted"') AS k)
    SELECT 'golden_secure.' || i.id || '@' || v_db FROM i ORDER BY i.id;
END;
$function$
