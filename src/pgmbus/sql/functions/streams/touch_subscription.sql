-- Function: mbus.touch_subscription(id, p_now)
--
-- Purpose:  touch_subscription(id): the listener is still there (postpones expiry).
-- Params:   id bigint FILL
--           p_now timestamptz DEFAULT NULL FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.touch_subscription(id bigint, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    UPDATE mbus.subscriptions AS s SET last_active_at = coalesce(p_now, now())
    WHERE s.id = touch_subscription.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('subscription %s does not exist (expired?)', id);
    END IF;
END;
$$;
