-- Function: mbus.begin_move(queue, server)
--
-- Purpose:  Start moving a queue to another server: from now on clients of the map post to
--           the new server (moving_to) while pgmbus.scaleout.move_queue drains the old one
--           into it, then calls mbus.finish_move. Calling it again with the same server
--           resumes an interrupted move (nothing changes).
-- Params:   queue   a placed queue (text)
--           server  the server to move it to (text, in mbus.placement_server)
-- Returns:  void; MB001 for a bad name, MB002 for an unplaced queue or unknown server, MB006
--           when the queue lives there already, MB008 when another move of it is under way
-- Locks:    the server's row (FOR KEY SHARE), the placement row (FOR UPDATE)
-- Calls:    mbus.check_name
-- Tables:   mbus.placement, mbus.placement_server
CREATE OR REPLACE FUNCTION mbus.begin_move(queue text, server text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    p mbus.placement;
BEGIN
    PERFORM mbus.check_name('queue', queue, 63);
    PERFORM mbus.check_name('server', server, 32);
    -- FOR KEY SHARE: a concurrent mbus.drop_server waits for the move to commit, then sees it
    PERFORM 1 FROM mbus.placement_server AS s WHERE s.name = server FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('server %L does not exist', server);
    END IF;
    SELECT * INTO p FROM mbus.placement AS x WHERE x.kind = 'queue' AND x.name = queue FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('queue %L is not placed', queue);
    END IF;
    IF p.moving_to = server THEN
        RETURN;
    END IF;
    IF p.moving_to IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('queue %L is moving to %L already', queue, p.moving_to);
    END IF;
    IF p.servers[1] = server THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('queue %L lives on %L already', queue, server);
    END IF;
    UPDATE mbus.placement AS x SET moving_to = server, move_id = gen_random_uuid()::text WHERE x.kind = 'queue' AND x.name = queue;
END;
$$;
