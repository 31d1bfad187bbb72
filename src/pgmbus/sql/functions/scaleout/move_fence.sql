-- Function: mbus.move_fence(qname, server)
--
-- Purpose:  On the server a queue is moving away from: refuse every post to it from now on
--           (MB010, naming the new server; mbus.refuse_moved_post). pgmbus.scaleout.move_queue
--           calls it once the map sends posts to the new server and before the last drain, so
--           no message arrives here after the drain. Creating the trigger waits for the
--           transactions that are posting to the queue (they hold ROW EXCLUSIVE on its table),
--           and a post that has not inserted yet meets the trigger: nothing slips past it.
--           Calling it again (a resumed move) replaces the trigger.
-- Params:   qname   a queue of this database (text)
--           server  the server it moves to (text, the name rule)
-- Returns:  void; MB001/MB002 for a bad or unknown queue, MB001 for a bad server name
-- Locks:    SHARE ROW EXCLUSIVE on mbus.q_<qname> and its segments (waits for posting
--           transactions; posts wait for the caller's commit)
-- Calls:    mbus.check_name, mbus.generated_names, mbus.refuse_moved_post, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.move_fence(qname text, server text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_tbl text;
BEGIN
    PERFORM mbus.require_queue(qname);
    PERFORM mbus.check_name('server', server, 32);
    SELECT g.name INTO v_tbl FROM mbus.generated_names(qname) AS g
    WHERE g.kind = 'relation' AND g.what = 'table';
    EXECUTE format('DROP TRIGGER IF EXISTS mbus_moved ON mbus.%I', v_tbl);
    EXECUTE format('CREATE TRIGGER mbus_moved BEFORE INSERT ON mbus.%I FOR EACH ROW '
                   'EXECUTE FUNCTION mbus.refuse_moved_post(%L, %L)', v_tbl, qname, server);
END;
$$;
