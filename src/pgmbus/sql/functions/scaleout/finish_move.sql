-- Function: mbus.finish_move(queue)
--
-- Purpose:  End a move started by mbus.begin_move: the queue now lives on its moving_to server.
--           pgmbus.scaleout.move_queue calls it only once the old server holds no delivery of
--           the queue (the map never points away from pending messages).
-- Params:   queue  a queue being moved (text)
-- Returns:  void; MB001 for a bad name, MB002 for an unplaced queue, MB008 when no move is
--           under way
-- Locks:    the placement row (UPDATE)
-- Calls:    mbus.check_name
-- Tables:   mbus.placement
CREATE OR REPLACE FUNCTION mbus.finish_move(queue text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    p mbus.placement;
BEGIN
    PERFORM mbus.check_name('queue', queue, 63);
    SELECT * INTO p FROM mbus.placement AS x WHERE x.kind = 'queue' AND x.name = queue FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('queue %L is not placed', queue);
    END IF;
    IF p.moving_to IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008', MESSAGE = format('queue %L is not moving', queue);
    END IF;
    UPDATE mbus.placement AS x SET servers = ARRAY[p.moving_to], moving_to = NULL, move_id = NULL, placed_at = now()
    WHERE x.kind = 'queue' AND x.name = queue;
END;
$$;
