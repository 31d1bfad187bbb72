-- Function: mbus.move_unfence(qname)
--
-- Purpose:  Undo mbus.move_fence on a server a queue moves back to: posts are accepted again.
--           pgmbus.scaleout.move_queue calls it on the target before the map sends posts there,
--           and fences the queue again (with the server returned) when the move cannot begin.
-- Params:   qname  a queue of this database (text)
-- Returns:  text: the server the queue was fenced for (NULL when it was not fenced); MB001/MB002
--           for a bad or unknown queue
-- Locks:    ACCESS EXCLUSIVE on mbus.q_<qname> and its segments for the DROP TRIGGER (only
--           when the queue was fenced)
-- Calls:    mbus.generated_names, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.move_unfence(qname text)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_tbl    text;
    v_server text;
BEGIN
    PERFORM mbus.require_queue(qname);
    SELECT g.name INTO v_tbl FROM mbus.generated_names(qname) AS g
    WHERE g.kind = 'relation' AND g.what = 'table';
    -- tgargs holds the trigger's arguments, each ended by a NUL byte: (qname, server)
    SELECT split_part(encode(t.tgargs, 'escape'), '\000', 2) INTO v_server
    FROM pg_trigger AS t
    WHERE t.tgrelid = format('mbus.%I', v_tbl)::regclass AND t.tgname = 'mbus_moved';
    IF v_server IS NOT NULL THEN
        EXECUTE format('DROP TRIGGER mbus_moved ON mbus.%I', v_tbl);
    END IF;
    RETURN v_server;
END;
$$;
