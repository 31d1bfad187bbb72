-- Function: mbus._partition_needed(p_name, g, c)
--
-- Purpose:  _partition_needed(partition, group cursor): whether a live group may still have unread
--           events in the partition.
-- Params:   p_name text FILL
--           g mbus.stream_groups FILL
--           c mbus.stream_cursors FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
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
