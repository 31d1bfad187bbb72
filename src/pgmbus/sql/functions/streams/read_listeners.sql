-- Function: mbus.read_listeners(from_cursor, to_cursor, subscriptions)
--
-- Purpose:  The events between two cursors (those consumed at to_cursor and not at from_cursor,
--           the rule of read_between) that any of these subscriptions wants, each with the ids
--           of those it matched (conditions through mbus._match, once per group; an event sent
--           directly to one subscription matches that one only). The live listeners of
--           `pgmbus serve` (Server-Sent Events) read with it: it takes no lock and moves no
--           group's cursor, so fire-and-forget listeners never hold back the group's reliable
--           readers, and one call serves every listener of every subscription of the process.
-- Params:   from_cursor    the earlier cursor (text)
--           to_cursor      the later cursor (text; keep ranges short: spark_next_cursor cuts)
--           subscriptions  the subscriptions' ids (bigint[]; unknown ids match nothing)
-- Returns:  TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
--           published_at timestamptz, subscription_ids bigint[]) in (txid, id) order; the
--           errors of read_between for bad cursors
-- Locks:    none (reads only; the conditions run with the caller's privileges)
-- Calls:    mbus._between, mbus._check_log, mbus._match, mbus._parse_position
-- Tables:   mbus.events, mbus.subscriptions
CREATE OR REPLACE FUNCTION mbus.read_listeners(from_cursor text, to_cursor text,
                                    subscriptions bigint[])
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz, subscription_ids bigint[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_from  mbus.stream_position;
    v_to    mbus.stream_position;
    v_rows  mbus.stream_row[];
    v_dir   mbus.stream_row[];
    v_group text;
    v_ev    bigint[] := '{}';
    v_sub   bigint[] := '{}';
BEGIN
    PERFORM mbus._check_log();
    v_from := (mbus._parse_position(from_cursor)).pos;
    v_to := (mbus._parse_position(to_cursor)).pos;
    SELECT array_agg(ROW(e.txid, e.id, e.topic, e.key, e.payload, e.headers,
                         e.published_at)::mbus.stream_row ORDER BY e.txid, e.id)
           FILTER (WHERE e.subscription_id IS NULL),
           array_agg(ROW(e.txid, e.id, e.topic, e.key, e.payload, e.headers,
                         e.published_at)::mbus.stream_row ORDER BY e.txid, e.id)
           FILTER (WHERE e.subscription_id = ANY (subscriptions))
    INTO v_rows, v_dir
    FROM mbus._between(v_from, v_to) AS e;
    IF v_rows IS NOT NULL THEN
        FOR v_group IN
            SELECT DISTINCT s.group_name FROM mbus.subscriptions AS s
            WHERE s.id = ANY (subscriptions)
        LOOP
            SELECT v_ev || coalesce(array_agg(m.event_id), '{}'),
                   v_sub || coalesce(array_agg(x), '{}')
            INTO v_ev, v_sub
            FROM mbus._match(v_group, v_rows) AS m, unnest(m.subscription_ids) AS x
            WHERE x = ANY (subscriptions);
        END LOOP;
    END IF;
    IF v_dir IS NOT NULL THEN
        SELECT v_ev || array_agg(e.id), v_sub || array_agg(e.subscription_id)
        INTO v_ev, v_sub
        FROM mbus.events AS e
        WHERE e.subscription_id IS NOT NULL
          AND e.id = ANY (ARRAY(SELECT d.id FROM unnest(v_dir) AS d));
    END IF;
    RETURN QUERY
    SELECT b.id, b.topic, b.key, b.payload, b.headers, b.published_at, h.subs
    FROM unnest(coalesce(v_rows, '{}') || coalesce(v_dir, '{}')) AS b
    JOIN (SELECT hh.event_id, array_agg(DISTINCT hh.subscription_id ORDER BY hh.subscription_id)
                 AS subs
          FROM unnest(v_ev, v_sub) AS hh (event_id, subscription_id)
          GROUP BY hh.event_id) AS h ON h.event_id = b.id
    ORDER BY b.txid, b.id;
END;
$$;
