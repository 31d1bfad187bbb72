-- Function: mbus.refuse_moved_post()
--
-- Purpose:  The trigger mbus.move_fence puts on the delivery table of a queue that moved to
--           another server: every insert (a post, a batch post, a trigger's copy, a replay)
--           is refused with MB010 naming the server the queue lives on now, so a client whose
--           placement map is stale learns where to post instead of leaving a message where no
--           one reads it.
-- Params:   TG_ARGV[0]  the queue's name; TG_ARGV[1]  the server it moved to
-- Returns:  trigger (never: it always raises MB010)
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.refuse_moved_post()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'MB010',
        MESSAGE = format('queue %L has moved to server %L', TG_ARGV[0], TG_ARGV[1]),
        HINT = 'read the placement map again and post there (pgmbus.scaleout.Cluster does)';
END;
$$;
