-- Function: mbus.subscribe_queue("group", queue, condition, params)
--
-- Purpose:  A subscription that routes its events into a queue: the group's (shared, never
--           expiring) subscription with this condition and params (mbus.subscribe), and a route
--           from it to the queue. mbus.move_routed then posts every event the subscription
--           matches (and every event sent directly to it) to the queue, exactly once. The group
--           should be read by move_routed only: it moves the group's cursor.
-- Params:   "group"    the group's name
--           queue      the queue's name (it must exist)
--           condition  the subscription's condition (see mbus.subscribe)
--           params     its parameters (a jsonb object; '{}' unless given)
-- Returns:  bigint: the subscription's id; mbus.subscribe's errors, MB001/MB002 for a bad or
--           unknown queue (nothing is created then)
-- Locks:    mbus.subscribe's; the route's row
-- Calls:    mbus.require_queue, mbus.subscribe
-- Tables:   mbus.subscription_queues
CREATE OR REPLACE FUNCTION mbus.subscribe_queue("group" text, queue text, condition text,
                                     params jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.require_queue(queue);
    v_id := mbus.subscribe("group", condition, params, NULL);
    INSERT INTO mbus.subscription_queues (subscription_id, qname)
    VALUES (v_id, queue)
    ON CONFLICT DO NOTHING;
    RETURN v_id;
END;
$$;
