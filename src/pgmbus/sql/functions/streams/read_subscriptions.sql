-- Function: mbus.read_subscriptions("group", max_events, slot)
--
-- Purpose:  read_next for a group of subscriptions: its next batch, only the events that matched
--           at least one of its subscriptions (mbus._match), each with the ids it matched; an
--           event sent directly to one subscription carries that id alone. Commit with
--           commit(group, cursor). Batches with no match are committed here (in the caller's
--           transaction), so an empty result means the group caught up (or, with on_busy 'skip',
--           another reader holds it). A condition that fails on some events is skipped for those
--           only, for its own subscriptions only, and counted in 'subscription_errors'.
-- Params:   "group"     the group's name
--           max_events  the most events read per batch (integer >= 1; 1000 unless given)
--           slot        the slot to read (NULL = the only slot of an unslotted group)
-- Returns:  TABLE (cursor text, id bigint, topic text, key text, payload jsonb, headers jsonb,
--           published_at timestamptz, subscription_ids bigint[]), in the batch's order; the
--           errors of read_next
-- Locks:    read_next's: the reader's advisory lock on the group (slot) to the end of the
--           transaction; commit's row lock on the slot's cursor for batches without a match;
--           the counter's row of mbus.stream_counters when a condition failed (its number
--           comes from mbus._match through the transaction-local setting mbus.match_failed)
-- Calls:    mbus._count, mbus._match, mbus.commit, mbus.read_next
-- Tables:   mbus.events
CREATE OR REPLACE FUNCTION mbus.read_subscriptions("group" text, max_events integer DEFAULT 1000,
                                        slot integer DEFAULT NULL)
RETURNS TABLE (cursor text, id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz, subscription_ids bigint[])
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_all    mbus.stream_row[];
    v_batch  mbus.stream_row[];
    v_cursor text;
    v_failed bigint;
    v_found  boolean;
    v_dir_ids  bigint[];
    v_dir_subs bigint[];
BEGIN
    LOOP
        SELECT array_agg(ROW(NULL, r.id, r.topic, r.key, r.payload, r.headers,
                             r.published_at)::mbus.stream_row ORDER BY r.ordinality),
               min(r.cursor)
        INTO v_all, v_cursor
        FROM mbus.read_next("group", max_events, slot) WITH ORDINALITY AS r;
        IF v_cursor IS NULL THEN
            RETURN;
        END IF;
        v_batch := v_all;
        -- events sent directly to one subscription (read_next gave only this group's): they
        -- go to that subscription alone, whatever the conditions say
        SELECT coalesce(array_agg(e.id), '{}'), coalesce(array_agg(e.subscription_id), '{}')
        INTO v_dir_ids, v_dir_subs
        FROM mbus.events AS e
        WHERE e.subscription_id IS NOT NULL
          AND e.id = ANY (ARRAY(SELECT u.id FROM unnest(v_batch) AS u));
        IF cardinality(v_dir_ids) > 0 THEN
            v_batch := ARRAY(SELECT u::mbus.stream_row FROM unnest(v_batch) AS u
                             WHERE NOT (u.id = ANY (v_dir_ids)));
        END IF;
        PERFORM set_config('mbus.match_failed', '0', true);
        RETURN QUERY
        SELECT v_cursor, b.id, b.topic, b.key, b.payload, b.headers, b.published_at,
               m.subscription_ids
        FROM (SELECT r.id, r.topic, r.key, r.payload, r.headers, r.published_at, r.ordinality
              FROM unnest(v_all) WITH ORDINALITY AS r) AS b
        JOIN (SELECT mm.event_id, array_agg(DISTINCT x ORDER BY x) AS subscription_ids
              FROM mbus._match("group", v_batch) AS mm, unnest(mm.subscription_ids) AS x
              GROUP BY mm.event_id
              UNION ALL
              SELECT d.event_id, ARRAY[d.subscription_id]
              FROM unnest(v_dir_ids, v_dir_subs) AS d (event_id, subscription_id))
             AS m ON m.event_id = b.id
        ORDER BY b.ordinality;
        v_found := FOUND;
        v_failed := current_setting('mbus.match_failed')::bigint;
        IF v_failed > 0 THEN
            PERFORM mbus._count('subscription_errors', v_failed);
        END IF;
        IF v_found THEN
            RETURN;
        END IF;
        PERFORM mbus.commit("group", v_cursor);
    END LOOP;
END;
$$;
