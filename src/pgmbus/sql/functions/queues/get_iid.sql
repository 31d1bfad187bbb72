-- Function: mbus.get_iid(qname)
--
-- Purpose:  A new globally unique message id for queue qname: '<qname>.<n>@<database>', n from
--           mbus.msg_id_seq (shared by all queues). The queue and the database are in it, so
--           mbus.take(iid) finds the queue. Posting with such an iid to qname stores no iid (the
--           row's id gives it back); callers use it to refer to a message before posting it
--           (consume_after, sagas).
-- Params:   qname  the queue's name (text)
-- Returns:  text: the iid; MB001/MB002 for a bad or unknown queue
-- Locks:    none (nextval of mbus.msg_id_seq)
-- Calls:    mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.get_iid(qname text)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    RETURN format('%s.%s@%s', qname, nextval('mbus.msg_id_seq'), current_database());
END;
$$;
