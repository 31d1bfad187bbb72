-- Function: mbus.regenerate_batch(names, fanout)
--
-- Purpose:  Make postn_<q>: many messages in one statement, one INSERT per consumer over the
--           same numbered messages (mbus.regenerate_fanout); returns their iids in the order of
--           data. With consume_after, mbus.post_each. On a queue with selectors, when the
--           statement raises (a selector raised) the messages are posted one by one through
--           post_<q> (mbus.post_each), which sends such copies to mbus.dmq; the posted counter
--           counts each message once. A queue with one consumer taking every message and no
--           trigger gets a single INSERT. Elements are checked in full only when needed, as in
--           post_.
-- Params:   names   mbus.regenerate_names(q)
--           fanout  mbus.regenerate_fanout(q, names)
-- Returns:  void
-- Locks:    none of its own (CREATE OR REPLACE FUNCTION; see mbus.regenerate_queue)
-- Calls:    mbus.fill_template, mbus.json_shallow_by_size, mbus.json_too_deep, mbus.post_each,
--           mbus.stamp_headers
-- Tables:   mbus.queue_segment, mbus.queue_waiter
-- Design:   docs/DESIGN.md#regenerate_batch-and-regenerate_lease_ack-plans-kept-and-no-guc-per-call
CREATE OR REPLACE FUNCTION mbus.regenerate_batch(names jsonb, fanout jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $gen$
DECLARE
    v_selective boolean := (fanout ->> 'selective')::boolean;
    -- one consumer without a selector and no trigger: the single-INSERT form
    v_single    boolean := (fanout ->> 'simple')::boolean
                           AND jsonb_array_length(fanout -> 'plain') = 1;
    v_names     jsonb := names || fanout || jsonb_build_object(
        'checks', (fanout ->> 'nocons') || (fanout ->> 'guard'),
        'open', CASE WHEN v_selective THEN '    BEGIN' ELSE '    RETURN QUERY' END,
        'select', CASE WHEN v_selective THEN 'SELECT array_agg(m.iid ORDER BY m.ord) INTO v_iids'
                       ELSE 'SELECT m.iid' END,
        'tail', CASE WHEN v_selective THEN ';' ELSE ' ORDER BY m.ord;' END
            || mbus.fill_template($t$
    -- counter: messages posted to the queue (after the statement, so a batch that falls back
    -- to post_each is not counted twice). Over unnest(data), not generate_series(1,
    -- cardinality(data)): the generic plan of the latter guesses 1,000 rows, so PostgreSQL kept
    -- planning it again for every batch (14 us per call); unnest's guess is 10 rows.
    PERFORM nextval({posted}) FROM unnest(data);$t$, names)
            || CASE WHEN v_selective THEN mbus.fill_template($t$
    EXCEPTION WHEN OTHERS THEN
        RETURN QUERY SELECT mbus.post_each({q}, data, headers, properties, delayed_until, expires,
                                           priority);
        RETURN;
    END;
    RETURN QUERY SELECT unnest(v_iids);$t$, names) ELSE '' END);
BEGIN
    IF v_single THEN
        v_names := v_names || jsonb_build_object(
            'default_headers', '',
            'cid', fanout -> 'plain' ->> 0,
            'cposted', fanout -> 'pposted' ->> 0);
        v_names := v_names || jsonb_build_object('statement', mbus.fill_template($t$
    -- one consumer taking every message, no trigger: one INSERT; its RETURNING bumps both
    -- counters, and the ids, taken in the order of data, give the iids back in that order
    RETURN QUERY
    WITH i AS (
        INSERT INTO mbus.{tbl} AS q (c, vt, id, added, delayed_until, expires, headers, properties,
                                data, seg, priority)
        SELECT {cid}, coalesce(delayed_until, v_now), nextval('mbus.msg_id_seq'), v_now,
               delayed_until, expires,
               CASE WHEN x.h IS NOT NULL THEN mbus.stamp_headers(x.h, {q}, v_now) END,
               x.p, x.d, v_seg, coalesce(x.pr, 0)::smallint
        FROM unnest(data, headers, properties, priority) AS x (d, h, p, pr)
        RETURNING q.id, nextval({cposted}) AS n, nextval({posted}) AS k)
    SELECT {q_prefix} || i.id || '@' || v_db FROM i ORDER BY i.id;$t$, v_names));
    ELSE
        v_names := v_names || jsonb_build_object(
            'default_headers', mbus.fill_template($t$
    v_h := jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db,
                              'destination', {q}, 'enqueue_time', v_now);$t$, names),
            'statement', mbus.fill_template($t$
{open}
    WITH m AS MATERIALIZED (
        SELECT u.id, {q_prefix} || u.id || '@' || v_db AS iid, v_now AS added,
               delayed_until AS delayed_until, expires AS expires,
               coalesce(u.sh, v_h) AS headers, u.sh AS stored_headers,
               u.p AS properties, u.d AS data, NULL::text[] AS consume_after, 0 AS attempts,
               NULL::uuid AS lease_token, NULL::timestamptz AS lease_until, u.ord,
               coalesce(u.pr, 0)::smallint AS priority
        FROM (SELECT nextval('mbus.msg_id_seq') AS id, x.d, x.h, x.p, x.pr, x.ord,
                     CASE WHEN x.h IS NOT NULL THEN mbus.stamp_headers(x.h, {q}, v_now) END AS sh
              FROM unnest(data, headers, properties, priority)
                   WITH ORDINALITY AS x(d, h, p, pr, ord)) AS u){fanoutn}{trign}
    {select} FROM m, (SELECT {fire} AS n) AS fired WHERE fired.n IS NOT NULL{tail}$t$, v_names));
    END IF;
    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_postn}(
    data jsonb[], headers jsonb[] DEFAULT NULL, properties jsonb[] DEFAULT NULL,
    delayed_until timestamptz DEFAULT NULL, expires timestamptz DEFAULT NULL,
    priority integer[] DEFAULT NULL)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS {body}$f$, jsonb_build_object(
        'fn_postn', names ->> 'fn_postn',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_now  timestamptz := now();
    v_db   text := current_database();
    v_h    jsonb;
    v_seg  smallint;
    v_iids text[];
BEGIN
    IF data IS NULL OR cardinality(data) = 0 THEN
        RETURN;
    END IF;{checks}
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
           AND NOT (SELECT s.prioritized FROM mbus.queue_segment AS s WHERE s.qname = {q}) THEN
            -- the queue's first message with a priority: claims take the priority tier from now on
            UPDATE mbus.queue_segment AS s SET prioritized = true
            WHERE s.qname = {q} AND NOT s.prioritized;
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
        RETURN QUERY SELECT mbus.post_each({q}, data, headers, properties, delayed_until, expires,
                                           priority);
        RETURN;
    END IF;{default_headers}
    v_seg := CASE WHEN delayed_until > v_now + interval '1 minute' THEN 0
                  ELSE coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = {q}),
                                1::smallint) END;
    IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = {q}) THEN
        PERFORM pg_notify({chan}, {q});
    END IF;{statement}
END;
$b$, v_names))));
END;
$gen$;
