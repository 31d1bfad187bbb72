-- Function: mbus.touch_subscription(id, p_now)
--
-- Purpose:  The listener is still there: set the subscription's last_active_at, which postpones
--           its expiry (maintain removes subscriptions inactive for longer than expires_after).
-- Params:   id     the subscription's id
--           p_now  the clock (NULL = now()); tests move it
-- Returns:  void; MB002 when the subscription does not exist (it may have expired)
-- Locks:    the subscription's row (UPDATE), held to commit
-- Calls:    mbus.given_clock
-- Tables:   mbus.subscriptions
CREATE OR REPLACE FUNCTION mbus.touch_subscription(id bigint, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    UPDATE mbus.subscriptions AS s SET last_active_at = coalesce(mbus.given_clock(p_now), now())
    WHERE s.id = touch_subscription.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('subscription %s does not exist (expired?)', id);
    END IF;
END;
$$;
