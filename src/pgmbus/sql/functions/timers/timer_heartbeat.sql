-- Function: mbus.timer_heartbeat(p_dispatcher, p_lease_s, p_now)
--
-- Purpose:  Keep a dispatcher alive and rebalance the buckets (each bucket's callbacks are
--           claimed only by the dispatcher leasing it): its mbus.timer_dispatchers row gets
--           heartbeat_at = now (dispatchers silent for 3 * p_lease_s are removed); its share is
--           ceil(buckets / L), L = the dispatchers that beat within p_lease_s; it renews the
--           leases it holds, drops expired ones, releases its highest bucket ids above its share
--           and takes free or expired buckets in id order (SKIP LOCKED) below it. A dead
--           dispatcher's buckets are taken over within p_lease_s plus one heartbeat; a new one
--           gets its share as the others release theirs at their next heartbeat.
-- Params:   p_dispatcher  the dispatcher's id (text)
--           p_lease_s     the bucket lease in seconds (default 10; MB006 unless > 0)
--           p_now         the clock (NULL = now()); tests move it
-- Returns:  integer[]: the ids of the buckets it holds now, in order ('{}' when none)
-- Locks:    row locks, held to commit, of its own mbus.timer_dispatchers row, of the dead ones
--           it deletes and of its own mbus.timer_buckets rows (waits if another dispatcher is
--           taking one of its expired buckets); FOR UPDATE SKIP LOCKED on the free buckets it
--           takes
-- Calls:    mbus.given_clock
-- Tables:   mbus.timer_buckets, mbus.timer_dispatchers
CREATE OR REPLACE FUNCTION mbus.timer_heartbeat(p_dispatcher text, p_lease_s double precision DEFAULT 10,
    p_now timestamptz DEFAULT NULL)
RETURNS integer[]
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
    v_until timestamptz := v_now + make_interval(secs => p_lease_s);
    v_total integer;
    v_live integer;
    v_share integer;
    v_held integer;
BEGIN
    IF p_lease_s <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'lease_s must be > 0';
    END IF;
    INSERT INTO mbus.timer_dispatchers AS d (id, started_at, heartbeat_at)
    VALUES (p_dispatcher, v_now, v_now)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at;
    DELETE FROM mbus.timer_dispatchers AS d
    WHERE d.heartbeat_at < v_now - make_interval(secs => 3 * p_lease_s);

    SELECT count(*) INTO v_total FROM mbus.timer_buckets;
    SELECT count(*) INTO v_live FROM mbus.timer_dispatchers AS d
    WHERE d.heartbeat_at >= v_now - make_interval(secs => p_lease_s);
    v_share := ceil(v_total::numeric / greatest(v_live, 1));

    UPDATE mbus.timer_buckets AS b SET lease_until = v_until
    WHERE b.owner = p_dispatcher AND b.lease_until > v_now;
    -- a lease that expired may have been taken by another dispatcher meanwhile: drop ours
    UPDATE mbus.timer_buckets AS b SET owner = NULL, lease_until = NULL
    WHERE b.owner = p_dispatcher AND b.lease_until <= v_now;

    SELECT count(*) INTO v_held FROM mbus.timer_buckets AS b WHERE b.owner = p_dispatcher;
    IF v_held > v_share THEN
        UPDATE mbus.timer_buckets AS b SET owner = NULL, lease_until = NULL
        WHERE b.id IN (SELECT b2.id FROM mbus.timer_buckets AS b2
                       WHERE b2.owner = p_dispatcher
                       ORDER BY b2.id DESC LIMIT v_held - v_share);
    ELSIF v_held < v_share THEN
        WITH free AS (
            SELECT b.id FROM mbus.timer_buckets AS b
            WHERE b.owner IS NULL OR b.lease_until <= v_now
            ORDER BY b.id
            LIMIT v_share - v_held
            FOR UPDATE SKIP LOCKED
        )
        UPDATE mbus.timer_buckets AS b SET owner = p_dispatcher, lease_until = v_until
        FROM free WHERE b.id = free.id;
    END IF;
    RETURN ARRAY(SELECT b.id FROM mbus.timer_buckets AS b
                 WHERE b.owner = p_dispatcher ORDER BY b.id);
END;
$$;
