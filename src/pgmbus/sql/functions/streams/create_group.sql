-- Function: mbus.create_group(name, start, slots)
--
-- Purpose:  Create a consumer group positioned at start: its row in mbus.stream_groups (default
--           options; change them with configure_group) and one cursor per slot in
--           mbus.stream_cursors. With slots > 1 the group is split by key hash (mbus.key_slot)
--           into that many slots, each with its own cursor and reader, so events of one key stay
--           in order in one slot while slots are read in parallel.
-- Params:   name   the group's name (the name rule, at most 48 bytes)
--           start  where it starts: 'beginning', 'now' (default), a timestamp, or an event id (see
--                  mbus._start_snapshot)
--           slots  the number of slots (1 to 256; 1 unless given)
-- Returns:  void; MB001 for a bad name, MB003 when the group exists, MB006 for a bad slots or
--           start, MB009 when the log is not this cluster's
-- Locks:    the new rows of mbus.stream_groups and mbus.stream_cursors (INSERT); a concurrent
--           create of the same name waits for this transaction on the primary key
-- Calls:    mbus._check_log, mbus._start_snapshot, mbus.check_name
-- Tables:   mbus.stream_cursors, mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus.create_group(name text, start text DEFAULT 'now', slots integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_snap pg_snapshot;
BEGIN
    PERFORM mbus._check_log();
    PERFORM mbus.check_name('group', create_group.name, 48);
    IF slots IS NULL OR slots < 1 OR slots > 256 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('slots must be between 1 and 256, not %s', slots);
    END IF;
    v_snap := mbus._start_snapshot(start);
    BEGIN
        INSERT INTO mbus.stream_groups (name, slots) VALUES (create_group.name, slots);
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = format('consumer group %L already exists', create_group.name);
    END;
    INSERT INTO mbus.stream_cursors (group_name, slot, lo)
    SELECT create_group.name, s, v_snap FROM generate_series(0, slots - 1) AS s;
END;
$$;
