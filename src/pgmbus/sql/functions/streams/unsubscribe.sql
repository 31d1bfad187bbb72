-- Function: mbus.unsubscribe(id)
--
-- Purpose:  Remove a subscription. It is shared by every listener with the same group, condition
--           and params, so it is gone for all of them.
-- Params:   id  the subscription's id
-- Returns:  void; MB002 when the subscription does not exist
-- Locks:    the subscription's row (DELETE), held to commit
-- Calls:    none
-- Tables:   mbus.subscriptions
CREATE OR REPLACE FUNCTION mbus.unsubscribe(id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.subscriptions AS s WHERE s.id = unsubscribe.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('subscription %s does not exist', id);
    END IF;
END;
$$;
