-- Function: mbus.http_read(p_group, p_max_events, p_slot, p_lease, p_client_id, p_now)
--
-- Purpose:  Lease the next batch of a consumer group (slot) to an HTTP reader, which cannot hold
--           the transaction that makes SQL readers exactly-once: the batch of mbus.read_next is
--           returned with a token, and the lease row remembers the group's position before and
--           after it, so that mbus.http_commit(token) moves the group exactly past it, once. While
--           the lease lives other HTTP readers of the slot get MB008; when it ends uncommitted
--           the next read returns the same events (HTTP readers get every event at least once).
-- Params:   p_group       the group
--           p_max_events  batch size (>= 1)
--           p_slot        the slot (NULL for an unslotted group)
--           p_lease       how long the lease lasts (> 0, at most 1 hour)
--           p_client_id   the API client reading (recorded)
--           p_now         the time (default clock_timestamp(); tests move it)
-- Returns:  table (token, lease_until, cursor, id, topic, key, payload, headers, published_at):
--           the batch in read order; no rows when the group has caught up (no lease is taken)
-- Locks:    the slot's reader advisory lock (transaction-level, as read_next) and its
--           mbus.http_stream_leases row
-- Calls:    mbus._group, mbus._reader_lock_key, mbus._slot_of, mbus.given_clock, mbus.group_cursor,
--           mbus.read_next
-- Tables:   mbus.http_stream_leases, mbus.stream_groups
CREATE OR REPLACE FUNCTION mbus.http_read(p_group text, p_max_events integer, p_slot integer,
                               p_lease interval, p_client_id bigint DEFAULT NULL,
                               p_now timestamptz DEFAULT NULL)
RETURNS TABLE (token uuid, lease_until timestamptz, cursor text, id bigint, topic text,
               key text, payload jsonb, headers jsonb, published_at timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    g       mbus.stream_groups;
    l       mbus.http_stream_leases;
    v_slot  integer;
    v_now   timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_from  text;
    v_token uuid := gen_random_uuid();
    v_until timestamptz;
BEGIN
    IF p_lease IS NULL OR p_lease <= interval '0' OR p_lease > interval '1 hour' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease must be more than 0 and at most 1 hour, not %s', p_lease);
    END IF;
    g := mbus._group(p_group);
    v_slot := mbus._slot_of(g, p_slot);
    v_until := v_now + p_lease;
    PERFORM pg_advisory_xact_lock(mbus._reader_lock_key(g.name, v_slot));
    SELECT * INTO l FROM mbus.http_stream_leases AS hl
    WHERE hl.group_name = g.name AND hl.slot = v_slot FOR UPDATE;
    IF FOUND AND l.lease_until > v_now THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('consumer group %L slot %s is leased by another HTTP reader until %s',
                             g.name, v_slot, l.lease_until),
            HINT = 'commit or let the lease end; each slot has one HTTP reader at a time';
    END IF;
    DELETE FROM mbus.http_stream_leases AS hl WHERE hl.group_name = g.name AND hl.slot = v_slot;
    v_from := mbus.group_cursor(g.name, CASE WHEN g.slots > 1 THEN v_slot END);
    RETURN QUERY
    WITH b AS MATERIALIZED (
        SELECT * FROM mbus.read_next(g.name, p_max_events, CASE WHEN g.slots > 1 THEN v_slot END)
                      WITH ORDINALITY AS r(cursor, id, topic, key, payload, headers,
                                           published_at, n)
    ), leased AS (
        INSERT INTO mbus.http_stream_leases AS hl
            (group_name, slot, token, from_cursor, to_cursor, events, client_id, leased_at,
             lease_until)
        SELECT g.name, v_slot, v_token, v_from, min(b.cursor), count(*), p_client_id, v_now,
               v_until
        FROM b HAVING count(*) > 0
        RETURNING hl.token
    )
    SELECT v_token, v_until, b.cursor, b.id, b.topic, b.key, b.payload, b.headers,
           b.published_at
    FROM b ORDER BY b.n;
END;
$$;
