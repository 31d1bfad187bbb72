-- Function: mbus.unsubscribe_queue(subscription_id, queue)
--
-- Purpose:  Remove the route from a subscription to a queue (the subscription itself stays:
--           mbus.unsubscribe removes it, and its routes with it).
-- Params:   subscription_id  the subscription's id
--           queue            the queue's name
-- Returns:  boolean: whether there was such a route
-- Locks:    the route's row
-- Calls:    none
-- Tables:   mbus.subscription_queues
CREATE OR REPLACE FUNCTION mbus.unsubscribe_queue(subscription_id bigint, queue text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.subscription_queues AS r
    WHERE r.subscription_id = unsubscribe_queue.subscription_id AND r.qname = queue;
    RETURN FOUND;
END;
$$;
