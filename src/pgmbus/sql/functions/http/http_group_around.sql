-- Function: mbus.http_group_around(p_group, p_topic, p_slot, p_n)
--
-- Purpose:  The events of topic p_topic around a consumer group's (slot's) committed position,
--           for the dashboard: up to p_n consumed ones just before it and up to p_n unconsumed
--           ones just after it, in the group's read order (txid, id), read without locking.
--           Both sides walk the events_txid_id index from the position: the consumed side
--           backwards from the highest txid a consumed event can have (lo's xmax or the
--           position's after_txid), the unconsumed side forwards from lo's xmin.
-- Params:   p_group  the group
--           p_topic  the topic (one of the group's topics when it has a list; MB002 otherwise)
--           p_slot   the slot (NULL = slot 0; MB002 for a slot the group does not have)
--           p_n      how many events on each side (1..100)
-- Returns:  table (side, id, topic, key, payload, headers, published_at): side 'before' (newest
--           first) then 'after' (oldest first); MB002/MB008 for an unknown or expired group
-- Locks:    none (reads only)
-- Calls:    mbus._consumed, mbus._group, mbus.key_slot
-- Tables:   mbus.events, mbus.stream_cursors, mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus.http_group_around(p_group text, p_topic text, p_slot integer,
                                                  p_n integer)
RETURNS TABLE (side text, id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    g      mbus.stream_groups := mbus._group(p_group);
    v_slot integer := coalesce(p_slot, 0);
    c      mbus.stream_cursors;
    v_pos  mbus.stream_position;
BEGIN
    IF p_n IS NULL OR p_n NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'n must be between 1 and 100';
    END IF;
    IF v_slot < 0 OR v_slot >= g.slots THEN  -- a slot the group does not have is not found
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('group %s has no slot %s (it has %s)', p_group, v_slot, g.slots);
    END IF;
    IF g.topics IS NOT NULL AND NOT p_topic = ANY (g.topics) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('group %s does not read topic %s', p_group, p_topic);
    END IF;
    SELECT * INTO c FROM mbus.stream_cursors AS sc
    WHERE sc.group_name = p_group AND sc.slot = v_slot;
    v_pos := ROW(c.lo, c.hi, c.after_txid, c.after_id);
    RETURN QUERY
        SELECT 'before'::text, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
        FROM mbus.events AS e
        WHERE e.txid <= greatest(pg_snapshot_xmax(c.lo), c.after_txid)
          AND e.topic = p_topic
          AND mbus._consumed(e.txid, e.id, v_pos)
          AND (g.slots = 1 OR mbus.key_slot(e.key, e.id, g.slots) = v_slot)
        ORDER BY e.txid DESC, e.id DESC
        LIMIT p_n;
    RETURN QUERY
        SELECT 'after'::text, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
        FROM mbus.events AS e
        WHERE e.txid >= pg_snapshot_xmin(c.lo)
          AND e.topic = p_topic
          AND NOT mbus._consumed(e.txid, e.id, v_pos)
          AND pg_visible_in_snapshot(e.txid, pg_current_snapshot())
          AND (g.slots = 1 OR mbus.key_slot(e.key, e.id, g.slots) = v_slot)
        ORDER BY e.txid, e.id
        LIMIT p_n;
END;
$$;
