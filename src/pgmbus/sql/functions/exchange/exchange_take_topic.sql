-- Function: mbus.exchange_take_topic(route, amt)
--
-- Purpose:  The sending half of one transfer of a topic route: read the next batch (at most
--           amt events, mbus.read_next of the group 'xt_<route>', locked to the end of the
--           transaction) and move the group past it (mbus.commit); the mover commits only after
--           the destination committed the batch. Events outside the route's key range are
--           passed over. Elements are {eid, key, payload, headers}: eid is headers.eid, else
--           '<this database>:<id>'; headers carry seenby and source_db (this database when none).
--           The group's due retries (replayed dead letters) go first, deleted from
--           mbus.stream_retries in this transaction.
-- Params:   route  the topic route's name (text)
--           amt    the most events to read (integer, > 0)
-- Returns:  jsonb {"read": n, "events": [...]} (read counts the events passed over too; 0 when
--           the group has caught up); MB001/MB002 for a bad or unknown route, MB006 for amt < 1
-- Locks:    those of mbus.read_next and mbus.commit on the group, held to commit; the due rows
--           of mbus.stream_retries it deletes
-- Calls:    mbus.check_name, mbus.commit, mbus.read_next
-- Tables:   mbus.exchange_topic_route, mbus.stream_retries
CREATE OR REPLACE FUNCTION mbus.exchange_take_topic(route text, amt integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r        mbus.exchange_topic_route;
    v_read   integer;
    v_cursor text;
    v_out    jsonb;
BEGIN
    PERFORM mbus.check_name('route', route, 45);
    IF amt IS NULL OR amt < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('amt must be >= 1, not %s', amt);
    END IF;
    SELECT * INTO r FROM mbus.exchange_topic_route AS x WHERE x.name = route;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('route %L does not exist', route);
    END IF;
    -- replayed dead letters (mbus.replay_dead_letter of the group) go before the log: they
    -- leave the group's retries in this transaction, so they are sent once
    WITH due AS (
        SELECT sr.event_id FROM mbus.stream_retries AS sr
        WHERE sr.group_name = r.grp AND sr.next_at <= now()
        ORDER BY sr.next_at, sr.event_id
        LIMIT amt
        FOR UPDATE
    ), taken AS (
        DELETE FROM mbus.stream_retries AS sr
        USING due
        WHERE sr.group_name = r.grp AND sr.event_id = due.event_id
        RETURNING sr.event_id, sr.key, sr.payload, sr.headers, sr.next_at
    )
    SELECT count(*),
           coalesce(jsonb_agg(jsonb_build_object(
               'eid', coalesce(t.headers ->> 'eid', current_database() || ':' || t.event_id),
               'key', t.key, 'payload', t.payload,
               'headers', coalesce(t.headers, '{}'::jsonb)
                   || jsonb_build_object(
                          'seenby', coalesce(t.headers -> 'seenby',
                                             jsonb_build_array(current_database())),
                          'source_db', coalesce(t.headers -> 'source_db',
                                                to_jsonb(current_database()))))
               ORDER BY t.next_at, t.event_id), '[]')
    INTO v_read, v_out
    FROM taken AS t;
    IF v_read > 0 THEN
        RETURN jsonb_build_object('read', v_read, 'events', v_out);
    END IF;
    WITH b AS (
        SELECT row_number() OVER () AS ord, n.cursor, n.id, n.topic, n.key, n.payload, n.headers
        FROM mbus.read_next(r.grp, amt) AS n
    )
    SELECT count(*), (array_agg(b.cursor ORDER BY b.ord DESC))[1],
           coalesce(jsonb_agg(jsonb_build_object(
               'eid', coalesce(b.headers ->> 'eid', current_database() || ':' || b.id),
               'key', b.key, 'payload', b.payload,
               'headers', coalesce(b.headers, '{}'::jsonb)
                   || jsonb_build_object(
                          'seenby', coalesce(b.headers -> 'seenby',
                                             jsonb_build_array(current_database())),
                          'source_db', coalesce(b.headers -> 'source_db',
                                                to_jsonb(current_database()))))
               ORDER BY b.ord)
               FILTER (WHERE b.topic = r.src_topic
                       AND (r.key_lo IS NULL OR b.key >= r.key_lo)
                       AND (r.key_hi IS NULL OR b.key < r.key_hi)
                       AND (b.key IS NOT NULL OR (r.key_lo IS NULL AND r.key_hi IS NULL))),
               '[]')
    INTO v_read, v_cursor, v_out
    FROM b;
    IF v_read = 0 THEN
        RETURN jsonb_build_object('read', 0, 'events', '[]'::jsonb);
    END IF;
    PERFORM mbus.commit(r.grp, v_cursor);
    RETURN jsonb_build_object('read', v_read, 'events', v_out);
END;
$$;
