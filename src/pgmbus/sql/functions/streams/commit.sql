-- Function: mbus.commit("group", cursor)
--
-- Purpose:  Move the group (or the cursor's slot) to cursor, a cursor read_next returned: the
--           events of that batch are consumed. A cursor behind the group's position is refused
--           (MB006: another reader committed first; replays go through seek()), and so is a
--           cursor ahead of this database's transactions. Committing the same cursor twice is
--           harmless. lo_taken_at (the age maintain's max_lag measures) changes only when lo
--           does.
-- Params:   "group"  the group's name
--           cursor   the cursor to commit (text; '<slot>@...' for a slotted group)
-- Returns:  void; MB002/MB008 for an unknown or expired group, MB006 for a malformed, behind or
--           future cursor or a bad slot, MB009 when the log is not this cluster's
-- Locks:    the slot's row of mbus.stream_cursors FOR UPDATE, then UPDATE, held to commit;
--           waits for another transaction committing the same slot
-- Calls:    mbus._check_log, mbus._format_position, mbus._group, mbus._parse_position,
--           mbus._position_le, mbus._slot_of, mbus._snap_contains, mbus.seek
-- Tables:   mbus.stream_cursors, mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus.commit("group" text, cursor text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
-- Every statement here (and in mbus._group) has one sensible plan, a key lookup: keep it for
-- the session. Left to choose, _group's lookup was planned again on every commit (22 µs),
-- its cached plan being generic since read_next (which forces generic plans) had called it.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    g      mbus.stream_groups;
    c      mbus.stream_cursors;
    v_in   record;
    v_slot integer;
    v_cur  mbus.stream_position;
BEGIN
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes' THEN
        PERFORM mbus._check_log();  -- once per session (see mbus._check_log)
    END IF;
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
