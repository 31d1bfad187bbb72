-- Function: mbus.read_retries("group", max_events, lease, p_now)
--
-- Purpose:  Claim the group's events whose retry is due, oldest due first. Each claimed event's
--           next_at moves lease ahead, so it is hidden for that long and comes back if the
--           handler crashes; finish it with ack_retry() (handled) or retry_event() (failed
--           again). Rows another transaction is claiming are skipped.
-- Params:   "group"     the group's name
--           max_events  the most events claimed (integer; 100 unless given)
--           lease       how long a claim hides the event (interval; 1 minute unless given)
--           p_now       the clock (NULL = now()); tests move it
-- Returns:  TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb, published_at
--           timestamptz, attempts integer, last_error text); no row when nothing is due;
--           MB002/MB008 for an unknown or expired group, MB006 for max_events under 1 or a
--           lease not from 0 to 100 years (NULL included)
-- Locks:    row locks FOR UPDATE SKIP LOCKED on the due rows of mbus.stream_retries, then their
--           UPDATE, held to commit
-- Calls:    mbus._group, mbus.given_clock
-- Tables:   mbus.stream_retries
CREATE OR REPLACE FUNCTION mbus.read_retries("group" text, max_events integer DEFAULT 100,
                                  lease interval DEFAULT '1 minute',
                                  p_now timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz, attempts integer, last_error text)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
BEGIN
    PERFORM mbus._group("group");
    -- a negative count failed the LIMIT (2201W); a NULL lease hid the events for good
    IF max_events IS NULL OR max_events < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('max_events must be 1 or more, not %s',
                             coalesce(max_events::text, 'NULL'));
    END IF;
    IF lease IS NULL OR lease < interval '0' OR lease > interval '100 years' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease must be from 0 to 100 years, not %s',
                             coalesce(lease::text, 'NULL'));
    END IF;
    RETURN QUERY
    WITH due AS (
        SELECT r.group_name, r.event_id FROM mbus.stream_retries AS r
        WHERE r.group_name = "group" AND r.next_at <= v_now
        ORDER BY r.next_at, r.event_id
        LIMIT max_events
        FOR UPDATE SKIP LOCKED
    )
    UPDATE mbus.stream_retries AS r SET next_at = v_now + lease
    FROM due
    WHERE r.group_name = due.group_name AND r.event_id = due.event_id
    RETURNING r.event_id, r.topic, r.key, r.payload, r.headers, r.published_at, r.attempts,
              r.last_error;
END;
$$;
