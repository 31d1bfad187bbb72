-- Function: mbus.take_from(qname, cname, iid)
--
-- Purpose:  Take the message with that iid from one consumer only (its delivery is deleted; the
--           other consumers keep theirs). Checks the names, then dispatches to the generated
--           take_from_<qname>_by_<cname>, which waits while another transaction holds the delivery
--           (a plain DELETE, as the original mbus API's take blocks). Expired deliveries are not
--           taken.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text)
--           iid    the message's iid (text)
-- Returns:  SETOF mbus.qt_model: the message, or no row when this consumer has no unexpired
--           delivery of it; MB001/MB002 for a bad or unknown queue or consumer
-- Locks:    row lock of the consumer's delivery in mbus.q_<qname> (DELETE), held to commit; waits
--           for a transaction that holds it
-- Calls:    mbus.generated_name, mbus.require_consumer
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.take_from(qname text, cname text, iid text)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)',
                                mbus.generated_name('function', 'take_from', qname, cname))
    USING iid;
END;
$$;
