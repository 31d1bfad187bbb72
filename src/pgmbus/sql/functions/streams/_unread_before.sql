-- Function: mbus._unread_before(p_name, g, c, p_before)
--
-- Purpose:  Whether the partition holds an event the group (slot) has not read that was
--           published before p_before: the test of mbus._partition_needed plus
--           published_at < p_before. maintain's lag expiry asks it with p_before = now - max_lag,
--           so a group is expired only when an event has waited longer than max_lag, never for
--           an event published a moment ago (such as the 'mbus.group_expired' event of another
--           group).
-- Params:   p_name    the partition's table name in schema mbus (e.g. 'events_0000001')
--           g         the group's row (mbus.stream_groups: topics, slots)
--           c         the cursor's row (mbus.stream_cursors: slot, lo, hi, after_txid, after_id)
--           p_before  only events published before this count
-- Returns:  boolean
-- Locks:    none (reads only)
-- Calls:    mbus._consumed, mbus.key_slot
-- Tables:   mbus.stream_cursors, mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus._unread_before(p_name text, g mbus.stream_groups,
                                               c mbus.stream_cursors, p_before timestamptz)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_found boolean;
BEGIN
    EXECUTE format(
        'SELECT EXISTS (SELECT 1 FROM mbus.%I AS e '
        'WHERE (e.txid = ANY ($1) OR e.txid >= $2) '
        '  AND e.published_at < $10 '
        '  AND NOT mbus._consumed(e.txid, e.id, ROW($3, $4, $5, $6)::mbus.stream_position) '
        '  AND ($7::text[] IS NULL OR e.topic = ANY ($7)) '
        '  AND ($8 = 1 OR mbus.key_slot(e.key, e.id, $8) = $9))', p_name)
    INTO v_found
    USING ARRAY(SELECT pg_snapshot_xip(c.lo)), pg_snapshot_xmax(c.lo), c.lo, c.hi,
          c.after_txid, c.after_id, g.topics, g.slots, c.slot, p_before;
    RETURN v_found;
END;
$$;
