-- Function: mbus.drop_server(name)
--
-- Purpose:  Remove a server from the placement map; refused while a queue or topic is placed
--           on it, moving to it, or leaving it in a change of a topic's servers (move them first:
--           pgmbus.scaleout.move_queue, change_topic_servers).
-- Params:   name  the server's name (text)
-- Returns:  void; MB001 for a bad name, MB002 for an unknown server, MB008 while something is
--           placed on it
-- Locks:    a row lock on the server's row (FOR UPDATE: waits for an uncommitted mbus.place,
--           begin_move or change_topic_servers naming it, which hold FOR KEY SHARE), then its
--           delete
-- Calls:    mbus.check_name
-- Tables:   mbus.placement, mbus.placement_server
CREATE OR REPLACE FUNCTION mbus.drop_server(name text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_used text;
BEGIN
    PERFORM mbus.check_name('server', name, 32);
    PERFORM 1 FROM mbus.placement_server AS s WHERE s.name = drop_server.name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('server %L does not exist', name);
    END IF;
    SELECT string_agg(p.kind || ' ' || p.name, ', ' ORDER BY p.kind, p.name) INTO v_used
    FROM mbus.placement AS p
    WHERE drop_server.name = ANY (p.servers) OR p.moving_to = drop_server.name
       OR drop_server.name = ANY (p.previous);
    IF v_used IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('server %L still holds %s', name, v_used);
    END IF;
    DELETE FROM mbus.placement_server AS s WHERE s.name = drop_server.name;
END;
$$;
