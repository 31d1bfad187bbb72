-- Function: mbus.unplace(kind, name)
--
-- Purpose:  Take a queue or topic out of the placement map (its messages stay where they are;
--           `pgmbus placement unplace` refuses while the server still holds deliveries of a
--           queue, this function cannot see another server). Refused during a move and during
--           a change of a topic's servers.
-- Params:   kind  'queue' or 'topic'
--           name  the placed name (text)
-- Returns:  void; MB002 when the name is not placed, MB006 for a bad kind, MB008 during a move
--           or a change
-- Locks:    the placement row (DELETE)
-- Calls:    none
-- Tables:   mbus.placement
CREATE OR REPLACE FUNCTION mbus.unplace(kind text, name text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    p mbus.placement;
BEGIN
    IF kind IS NULL OR kind NOT IN ('queue', 'topic') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('kind must be queue or topic, not %L', kind);
    END IF;
    SELECT * INTO p FROM mbus.placement AS x WHERE x.kind = unplace.kind AND x.name = unplace.name
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('%s %L is not placed', kind, name);
    END IF;
    IF p.moving_to IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('queue %L is moving to %L', name, p.moving_to);
    END IF;
    IF p.previous IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('topic %L is changing from %s to %s', name, p.previous, p.servers);
    END IF;
    DELETE FROM mbus.placement AS x WHERE x.kind = unplace.kind AND x.name = unplace.name;
END;
$$;
