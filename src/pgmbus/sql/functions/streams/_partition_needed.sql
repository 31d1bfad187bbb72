-- Function: mbus._partition_needed(p_name, g, c)
--
-- Purpose:  Whether a live group (slot) may still have unread events in the partition: an
--           EXISTS over the partition for an event of a transaction not visible in the cursor's lo
--           (in lo's xip or at or after its xmax) that is not consumed at the cursor, of the
--           group's topics and the cursor's slot. Retention keeps such a partition (reported as
--           kept) and lag expiry uses it to find groups with unread events.
-- Params:   p_name  the partition's table name in schema mbus (e.g. 'events_0000001')
--           g       the group's row (mbus.stream_groups: topics, slots)
--           c       the cursor's row (mbus.stream_cursors: slot, lo, hi, after_txid, after_id)
-- Returns:  boolean: true when an unread event may be there
-- Locks:    none (reads only)
-- Calls:    mbus._consumed, mbus.key_slot
-- Tables:   mbus.stream_cursors, mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus._partition_needed(p_name text, g mbus.stream_groups,
                                       c mbus.stream_cursors)
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
        '  AND NOT mbus._consumed(e.txid, e.id, ROW($3, $4, $5, $6)::mbus.stream_position) '
        '  AND ($7::text[] IS NULL OR e.topic = ANY ($7)) '
        '  AND ($8 = 1 OR mbus.key_slot(e.key, e.id, $8) = $9))', p_name)
    INTO v_found
    USING ARRAY(SELECT pg_snapshot_xip(c.lo)), pg_snapshot_xmax(c.lo), c.lo, c.hi,
          c.after_txid, c.after_id, g.topics, g.slots, c.slot;
    RETURN v_found;
END;
$$;
