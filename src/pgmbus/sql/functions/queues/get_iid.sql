-- Function: mbus.get_iid(qname)
--
-- Purpose:  get_iid(qname): a new globally unique message id for queue qname: '<qname>.<n>@<database>'.
--           The queue and the database are in it, so mbus.take(iid) finds the queue.
-- Params:   qname text FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
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
