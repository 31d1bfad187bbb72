-- Function: mbus.peek(qname, msgid)
--
-- Purpose:  Is there a message with iid msgid in the queue (any message at all when msgid is NULL)?
--           Checks the queue name, then dispatches to the generated peek_<qname>, which looks the
--           iid up by id for the queue's own iids ('<qname>.<n>@<db>', not stored) and by the iid
--           column otherwise. Counts deliveries of every consumer, expired or not yet due ones
--           included.
-- Params:   qname  the queue's name (text)
--           msgid  the iid to look for (text; NULL = any message)
-- Returns:  boolean; MB001/MB002 for a bad or unknown queue
-- Locks:    none (reads only)
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.peek(qname text, msgid text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v boolean;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1)',
                   mbus.generated_name('function', 'peek', qname)) INTO v USING msgid;
    RETURN v;
END;
$$;
