-- Function: mbus.create_group(name, start, slots)
--
-- Purpose:  create_group(name, start, slots): a consumer group positioned at start ('beginning', 'now',
--           a timestamp, or an event id). With slots > 1 the group is split by key hash into that many
--           slots, each with its own cursor and reader.
-- Params:   name text FILL
--           start text DEFAULT 'now' FILL
--           slots integer DEFAULT 1 FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
