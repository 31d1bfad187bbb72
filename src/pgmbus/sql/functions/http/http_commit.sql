-- Function: mbus.http_commit(p_group, p_token, p_now)
--
-- Purpose:  Acknowledge a batch leased by mbus.http_read: the group moves to the batch's
--           cursor (mbus.commit) and the lease ends. Refused (MB007) when the token is unknown or
--           another group's, was used, has ended, or the group moved since the read (a seek).
-- Params:   p_group  the group the token was read from
--           p_token  the lease token
--           p_now    the time (default clock_timestamp())
-- Returns:  text: the group's new cursor
-- Locks:    the lease row (FOR UPDATE), then the group's cursor row (mbus.commit)
-- Calls:    mbus._group, mbus.commit, mbus.given_clock, mbus.group_cursor
-- Tables:   mbus.http_stream_leases, mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus.http_commit(p_group text, p_token uuid,
                                            p_now timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    l     mbus.http_stream_leases;
    g     mbus.stream_groups;
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
BEGIN
    SELECT * INTO l FROM mbus.http_stream_leases AS hl
    WHERE hl.token = p_token AND hl.group_name = p_group FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('stream lease %s is unknown or was committed already', p_token);
    END IF;
    DELETE FROM mbus.http_stream_leases AS hl WHERE hl.token = p_token;
    IF l.lease_until <= v_now THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('stream lease %s ended at %s: its events will be read again',
                             p_token, l.lease_until);
    END IF;
    g := mbus._group(l.group_name);
    IF mbus.group_cursor(g.name, CASE WHEN g.slots > 1 THEN l.slot END) <> l.from_cursor THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('consumer group %L moved since lease %s was taken (seek)',
                             g.name, p_token);
    END IF;
    PERFORM mbus.commit(g.name, l.to_cursor);
    RETURN l.to_cursor;
END;
$$;
