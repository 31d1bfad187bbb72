-- Function: mbus.unsubscribe(id)
--
-- Purpose:  unsubscribe(id): remove a subscription.
-- Params:   id bigint FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
