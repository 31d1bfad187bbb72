-- Function: mbus._group(p_name)
--
-- Purpose:  The group's row, for the functions that work on a live group.
-- Params:   p_name  the group's name
-- Returns:  mbus.stream_groups; MB002 when the group does not exist, MB008 when it is expired
--           (with the time and reason, and the hint to seek or drop it)
-- Locks:    none (reads only; no row lock)
-- Calls:    mbus.seek
-- Tables:   mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus._group(p_name text)
RETURNS mbus.stream_groups
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    g mbus.stream_groups;
BEGIN
    SELECT * INTO g FROM mbus.stream_groups AS sg WHERE sg.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer group %L does not exist', p_name);
    END IF;
    IF g.state = 'expired' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('consumer group %L expired at %s: %s', p_name, g.expired_at,
                             g.expired_why),
            HINT = 'reposition it with mbus.seek(group, start) or drop it';
    END IF;
    RETURN g;
END;
$$;
