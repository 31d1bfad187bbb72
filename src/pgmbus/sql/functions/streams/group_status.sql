-- Function: mbus.group_status()
--
-- Purpose:  One row per group and slot: its state, committed position and commit time, how many
--           committed events it has not consumed (pending_events) and when the oldest of them was
--           published, and the group's pending retries and dead letters. Counts by reading the
--           unread part of the log: cost grows with the backlog.
-- Params:   none
-- Returns:  TABLE (group_name text, slot integer, state text, group_position text, committed_at
--           timestamptz, pending_events bigint, oldest_pending_at timestamptz, retries bigint,
--           dead_letters bigint), ordered by group and slot
-- Locks:    none (reads only)
-- Calls:    mbus._consumed, mbus._format_position, mbus.key_slot
-- Tables:   mbus.events, mbus.stream_cursors, mbus.stream_dead_letters, mbus.stream_groups,
--           mbus.stream_retries
CREATE OR REPLACE FUNCTION mbus.group_status()
RETURNS TABLE (group_name text, slot integer, state text, group_position text,
               committed_at timestamptz, pending_events bigint,
               oldest_pending_at timestamptz, retries bigint, dead_letters bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT g.name, c.slot, g.state,
           mbus._format_position(ROW(c.lo, c.hi, c.after_txid, c.after_id)), c.committed_at,
           p.n, p.oldest,
           (SELECT count(*) FROM mbus.stream_retries AS r WHERE r.group_name = g.name),
           (SELECT count(*) FROM mbus.stream_dead_letters AS d WHERE d.group_name = g.name)
    FROM mbus.stream_groups AS g
    JOIN mbus.stream_cursors AS c ON c.group_name = g.name
    CROSS JOIN LATERAL (
        SELECT count(*) AS n, min(e.published_at) AS oldest
        FROM mbus.events AS e
        WHERE (e.txid = ANY (ARRAY(SELECT pg_snapshot_xip(c.lo))) OR
               e.txid >= pg_snapshot_xmax(c.lo))
          AND NOT mbus._consumed(e.txid, e.id, ROW(c.lo, c.hi, c.after_txid, c.after_id))
          AND pg_visible_in_snapshot(e.txid, pg_current_snapshot())
          AND (g.topics IS NULL OR e.topic = ANY (g.topics))
          AND (g.slots = 1 OR mbus.key_slot(e.key, e.id, g.slots) = c.slot)
    ) AS p
    ORDER BY g.name, c.slot;
$$;
