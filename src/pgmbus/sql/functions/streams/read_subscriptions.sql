-- Function: mbus.read_subscriptions("group", max_events, slot)
--
-- Purpose:  read_subscriptions(group, max_events, slot): read_next for a group of subscriptions: its next
--           batch, only the events that matched at least one of its subscriptions, each with the ids of
--           the subscriptions it matched. Commit with commit(group, cursor) as usual. Batches in which
--           nothing matched are committed here (in the caller's transaction) and reading goes on, so an
--           empty result means the group has caught up.
-- Params:   "group" text FILL
--           max_events integer DEFAULT 1000 FILL
--           slot integer DEFAULT NULL FILL
-- Returns:  TABLE (cursor text, id bigint, topic text, key text, payload jsonb, headers jsonb, published_at timestamptz, subscription_ids bigint[])
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.read_subscriptions("group" text, max_events integer DEFAULT 1000,
                                        slot integer DEFAULT NULL)
RETURNS TABLE (cursor text, id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz, subscription_ids bigint[])
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_batch  mbus.stream_row[];
    v_cursor text;
BEGIN
    LOOP
        SELECT array_agg(ROW(NULL, r.id, r.topic, r.key, r.payload, r.headers,
                             r.published_at)::mbus.stream_row ORDER BY r.ordinality),
               min(r.cursor)
        INTO v_batch, v_cursor
        FROM mbus.read_next("group", max_events, slot) WITH ORDINALITY AS r;
        IF v_cursor IS NULL THEN
            RETURN;
        END IF;
        RETURN QUERY
        SELECT v_cursor, b.id, b.topic, b.key, b.payload, b.headers, b.published_at,
               m.subscription_ids
        FROM unnest(v_batch) WITH ORDINALITY AS b
        JOIN (SELECT mm.event_id, array_agg(DISTINCT x ORDER BY x) AS subscription_ids
              FROM mbus._match("group", v_batch) AS mm, unnest(mm.subscription_ids) AS x
              GROUP BY mm.event_id) AS m ON m.event_id = b.id
        ORDER BY b.ordinality;
        IF FOUND THEN
            RETURN;
        END IF;
        PERFORM mbus.commit("group", v_cursor);
    END LOOP;
END;
$$;
