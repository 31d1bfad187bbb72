-- Function: mbus.commit("group", cursor)
--
-- Purpose:  commit(group, cursor): move the group (or the cursor's slot) to cursor. A cursor behind the
--           group's position is refused (MB006): replays go through seek(). Committing the same cursor
--           twice is harmless.
-- Params:   "group" text FILL
--           cursor text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.commit("group" text, cursor text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    g      mbus.stream_groups;
    c      mbus.stream_cursors;
    v_in   record;
    v_slot integer;
    v_cur  mbus.stream_position;
BEGIN
    PERFORM mbus._check_log();
    g := mbus._group("group");
    v_in := mbus._parse_position(cursor);
    v_slot := mbus._slot_of(g, v_in.slot);
    SELECT * INTO c FROM mbus.stream_cursors AS sc
    WHERE sc.group_name = g.name AND sc.slot = v_slot
    FOR UPDATE;
    v_cur := ROW(c.lo, c.hi, c.after_txid, c.after_id);
    IF mbus._format_position(v_cur) = mbus._format_position(v_in.pos) THEN
        RETURN;
    END IF;
    IF NOT mbus._position_le(v_cur, v_in.pos) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('cursor %L is behind consumer group %L''s position %L', cursor,
                             g.name, mbus._format_position(v_cur)),
            HINT = 'another reader committed first; to replay events use mbus.seek()';
    END IF;
    IF NOT mbus._snap_contains(pg_current_snapshot(),
                               coalesce((v_in.pos).hi, (v_in.pos).lo)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('cursor %L is ahead of this database''s transactions', cursor);
    END IF;
    UPDATE mbus.stream_cursors AS sc
    SET lo = (v_in.pos).lo, hi = (v_in.pos).hi, after_txid = (v_in.pos).after_txid,
        after_id = (v_in.pos).after_id, committed_at = now(),
        lo_taken_at = CASE WHEN (v_in.pos).lo::text = c.lo::text THEN c.lo_taken_at
                           ELSE now() END
    WHERE sc.group_name = g.name AND sc.slot = v_slot;
END;
$$;
