-- Function: mbus.floor_advance(qname)
--
-- Purpose:  Move the queue's claim floor (mbus.floor_guard) up to the lowest vt of its live
--           deliveries (per consumer, the first claim-index entry at or above the old floor; now
--           when the queue is empty), so claims start their FIFO scan there. It takes the floor
--           lock exclusively, waiting at most lock_timeout (20 ms) behind writers in flight, then
--           reads in a statement of its own, whose snapshot sees every write the floor must stay
--           under. Not obtained in time (a transaction that wrote to the queue is still open):
--           the floor stays where it is, and claims stay correct. A session lock, released on
--           every path, so a claim's transaction that runs it does not keep writers out.
-- Params:   qname  the queue's name (text; must exist)
-- Returns:  boolean: whether the floor was advanced
-- Locks:    pg_advisory_lock(1835165045, hashtext(qname)) (exclusive, released before return)
-- Calls:    mbus.generated_name
-- Tables:   mbus.consumer
-- Design:   docs/DESIGN.md#floor_guard-and-floor_advance-the-claim-floor
CREATE OR REPLACE FUNCTION mbus.floor_advance(qname text)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '20ms'
AS $$
DECLARE
    v_key   integer := hashtext(qname);
    v_seq   regclass := format('mbus.%I', mbus.generated_name('relation', 'floor', qname));
    v_tbl   text := mbus.generated_name('relation', 'table', qname);
    v_floor bigint;
    v_now   timestamptz := clock_timestamp();
    v_min   timestamptz;
BEGIN
    BEGIN
        PERFORM pg_advisory_lock(1835165045, v_key);
    EXCEPTION WHEN lock_not_available THEN
        -- A grant that races the timeout is kept by the server (a session lock outlives the
        -- error): give it back, or every writer of the queue would wait on it.
        PERFORM pg_advisory_unlock(1835165045, v_key)
        FROM pg_locks AS l
        WHERE l.pid = pg_backend_pid() AND l.locktype = 'advisory' AND l.granted
          AND l.classid = 1835165045 AND l.objid = v_key::oid AND l.objsubid = 2
          AND l.mode = 'ExclusiveLock';
        RETURN false;  -- a writer's transaction is open: the floor stays
    END;
    BEGIN
        v_floor := pg_sequence_last_value(v_seq);
        -- a statement of its own: its snapshot sees every committed write of vt
        EXECUTE format($q$
            SELECT min(f.vt)
            FROM mbus.consumer AS c
            CROSS JOIN LATERAL (SELECT q.vt FROM mbus.%I AS q
                                WHERE q.c = c.cid AND q.vt >= $2
                                ORDER BY q.vt LIMIT 1) AS f
            WHERE c.qname = $1$q$, v_tbl)
        INTO v_min
        USING qname, CASE WHEN v_floor IS NULL THEN '-infinity'::timestamptz
                          ELSE to_timestamp(0) + v_floor * interval '1 microsecond' END;
        v_min := least(v_min, v_now);
        IF v_min > '-infinity' THEN
            PERFORM setval(v_seq, floor(EXTRACT(epoch FROM v_min) * 1000000)::bigint);
        END IF;
        PERFORM pg_advisory_unlock(1835165045, v_key);
    EXCEPTION WHEN OTHERS OR query_canceled THEN
        PERFORM pg_advisory_unlock(1835165045, v_key);
        RAISE;
    END;
    RETURN true;
END;
$$;
