-- Function: mbus.http_extend(p_group, p_token, p_lease, p_now)
--
-- Purpose:  Keep a live HTTP read lease: it ends p_lease from now.
-- Params:   p_group  the group the token was read from
--           p_token  the lease token
--           p_lease  the new length (> 0, at most 1 hour)
--           p_now    the time (default clock_timestamp())
-- Returns:  timestamptz: the new end; MB007 when the lease is unknown, used or ended
-- Locks:    the lease row (UPDATE)
-- Calls:    mbus.given_clock
-- Tables:   mbus.http_stream_leases
CREATE OR REPLACE FUNCTION mbus.http_extend(p_group text, p_token uuid, p_lease interval,
                                 p_now timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now   timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_until timestamptz;
BEGIN
    IF p_lease IS NULL OR p_lease <= interval '0' OR p_lease > interval '1 hour' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease must be more than 0 and at most 1 hour, not %s', p_lease);
    END IF;
    UPDATE mbus.http_stream_leases AS hl SET lease_until = v_now + p_lease
    WHERE hl.token = p_token AND hl.group_name = p_group AND hl.lease_until > v_now
    RETURNING hl.lease_until INTO v_until;
    IF v_until IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('stream lease %s is unknown, committed or ended', p_token);
    END IF;
    RETURN v_until;
END;
$$;
