-- Function: mbus.exchange_forget(older_than, p_now)
--
-- Purpose:  Delete the received iids older than older_than from mbus.exchange_received. An iid
--           is only ever sent again while a batch is in flight (between the destination's
--           commit and the source's), so anything older than the longest batch is safe to
--           forget; keep a wide margin (a day by default) against a mover stopped mid-batch for
--           long, whose source transaction holds the batch until its connection drops.
-- Params:   older_than  how old a received iid must be to go (interval, 1 minute to 100
--                       years)
--           p_now       the clock (NULL = clock_timestamp()); tests move it
-- Returns:  bigint: the rows deleted; MB006 for older_than under a minute or over 100 years
-- Locks:    row deletes in mbus.exchange_received
-- Calls:    mbus.given_clock
-- Tables:   mbus.exchange_received
CREATE OR REPLACE FUNCTION mbus.exchange_forget(older_than interval DEFAULT '1 day',
                                                p_now timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_n bigint;
BEGIN
    IF older_than IS NULL OR older_than < interval '1 minute'
       OR older_than > interval '100 years' THEN  -- (beyond, now() - older_than overflows)
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('older_than must be from 1 minute to 100 years, not %s',
                             coalesce(older_than::text, 'NULL'));
    END IF;
    DELETE FROM mbus.exchange_received AS r
    WHERE r.received_at < coalesce(mbus.given_clock(p_now), clock_timestamp()) - older_than;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;
