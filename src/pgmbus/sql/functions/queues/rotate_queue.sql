-- Function: mbus.rotate_queue(qname, p_tries)
--
-- Purpose:  The queue's storage upkeep, in place of VACUUM. Call it in a READ COMMITTED
--           transaction of its own, about once a second on a busy queue (Bus consumers, the worker
--           and `pgmbus queue rotate --every` do). It deletes expired deliveries and old client
--           iids (up to 10000 each per call), moves the claim floor up (mbus.floor_advance),
--           TRUNCATEs every drained rotating segment that is not current (never waiting for a
--           lock; a busy one is closed), and makes the next empty segment current once the
--           current one reached rotate_bytes. Called by a claim not alone in its transaction it
--           truncates nothing; it does nothing after a write or outside READ COMMITTED.
-- Params:   qname    the queue's name (text)
--           p_tries  lock attempts per busy segment, 1 ms apart (integer; default 100)
-- Returns:  jsonb: {current, rotated, truncated: [n], busy: [n], kept: [n], closing, expired: the
--           deliveries deleted}, or {skipped: why}; MB001/MB002 for a bad or unknown queue
-- Locks:    pg_try_advisory_xact_lock(1835165043, hashtext(qname)) (no wait); row locks of the
--           expired deliveries it deletes (FOR UPDATE SKIP LOCKED: never waits); ACCESS SHARE on
--           the segments it measures and reads; LOCK TABLE segment IN ACCESS EXCLUSIVE MODE NOWAIT then
--           TRUNCATE, held to commit (released at once, by a rolled-back subtransaction, when the
--           segment has rows); a row lock on its mbus.queue_segment row (UPDATE). SECURITY DEFINER,
--           so roles that only consume can run it
-- Calls:    mbus.expire_client_iids, mbus.floor_advance, mbus.generated_name, mbus.require_queue
-- Tables:   mbus.queue_segment
-- Design:   docs/DESIGN.md#rotate_queue-the-steps-of-a-rotation
CREATE OR REPLACE FUNCTION mbus.rotate_queue(qname text, p_tries integer DEFAULT 100)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tbl         text := mbus.generated_name('relation', 'table', qname);
    st          mbus.queue_segment;
    v_seg       regclass;
    v_live      boolean;
    v_truncated integer[] := '{}';
    v_busy      integer[] := '{}';
    v_kept      integer[] := '{}';
    v_next      integer;
    -- Inside a claim (mbus.claim_upkeep set by the generated claims) a truncation is allowed
    -- only when the claim is surely its transaction's only statement (simple protocol,
    -- autocommit: statement start = transaction start): its lock lasts to that commit.
    v_truncate  boolean := current_setting('mbus.claim_upkeep', true) IS DISTINCT FROM 'on'
                           OR statement_timestamp() = transaction_timestamp();
    v_untouched integer[] := '{}';
    v_closing   integer;
    v_expired   bigint;
    v_count     bigint;
BEGIN
    PERFORM mbus.require_queue(qname);
    -- A transaction that wrote already is not one of its own; under REPEATABLE READ or
    -- SERIALIZABLE the emptiness check could miss a row committed after the snapshot.
    IF current_setting('transaction_isolation') <> 'read committed'
       OR pg_current_xact_id_if_assigned() IS NOT NULL
          AND current_setting('mbus.rotating_all', true) IS DISTINCT FROM 'on' THEN
        RETURN jsonb_build_object('skipped',
            'rotate_queue works only in a READ COMMITTED transaction of its own (autocommit)');
    END IF;
    IF NOT pg_try_advisory_xact_lock(1835165043, hashtext(qname)) THEN
        RETURN jsonb_build_object('skipped', 'another rotate_queue of this queue is running');
    END IF;
    SELECT * INTO st FROM mbus.queue_segment AS s WHERE s.qname = rotate_queue.qname;
    -- 0: expired deliveries go, segment by segment (a TID scan of the rows the expires index
    -- found), never waiting for a row another transaction holds.
    v_expired := 0;
    FOR n IN 0 .. 3 LOOP
        EXECUTE format($t$
            DELETE FROM mbus.%1$I AS q
            WHERE q.ctid = ANY (ARRAY(SELECT x.ctid FROM mbus.%1$I AS x WHERE x.expires <= $1
                                      LIMIT 10000 FOR UPDATE SKIP LOCKED))$t$,
                                          mbus.generated_name('relation', 'segment' || n, qname))
        USING clock_timestamp();
        GET DIAGNOSTICS v_count = ROW_COUNT;
        v_expired := v_expired + v_count;
    END LOOP;
    -- 0b: client iids older than queues.iid_window are forgotten (mbus.expire_client_iids).
    PERFORM mbus.expire_client_iids(qname, NULL, 10000);
    -- 0c: the claim floor moves up to the oldest live delivery (mbus.floor_advance).
    PERFORM mbus.floor_advance(qname);
    FOR n IN 1 .. 3 LOOP
        CONTINUE WHEN n = st.cur;
        v_seg := format('mbus.%I',
                        mbus.generated_name('relation', 'segment' || n, qname))::regclass;
        CONTINUE WHEN pg_relation_size(v_seg) = 0;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', v_seg) INTO v_live;
        IF v_live THEN
            v_kept := v_kept || n;
            CONTINUE;
        END IF;
        IF NOT v_truncate THEN  -- drained; left to autovacuum, and reused by rotation below
            v_untouched := v_untouched || n;
            CONTINUE;
        END IF;
        -- Busy consumers hold the segment's lock from claim to commit, nearly all the time:
        -- try again in the gaps, every millisecond for a while, but never sleep once this
        -- call holds the lock of a truncated segment (consumers would wait for it).
        FOR v_try IN 1 .. CASE WHEN cardinality(v_truncated) = 0 THEN greatest(p_tries, 1) ELSE 1 END LOOP
            BEGIN
                EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', v_seg);
                EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', v_seg) INTO v_live;
                IF v_live THEN
                    RAISE EXCEPTION USING ERRCODE = 'MBOK0';  -- roll back: releases the lock now
                END IF;
                EXECUTE format('TRUNCATE %s', v_seg);
                v_truncated := v_truncated || n;
                EXIT;
            EXCEPTION
                WHEN lock_not_available THEN
                    IF v_try >= p_tries OR cardinality(v_truncated) > 0 THEN
                        v_busy := v_busy || n;
                    ELSE
                        PERFORM pg_sleep(0.001);
                    END IF;
                WHEN SQLSTATE 'MBOK0' THEN
                    v_kept := v_kept || n;
                    EXIT;
                WHEN object_in_use THEN  -- deleted above a delivery others wait on: next call
                    v_busy := v_busy || n;
                    EXIT;
            END;
        END LOOP;
    END LOOP;
    -- cur_base_bytes: the size the current segment had when it became current (non-zero only
    -- for a drained segment reused untruncated): rotate after rotate_bytes of growth.
    IF pg_relation_size(format('mbus.%I', mbus.generated_name('relation', 'segment' || st.cur,
                                                              qname))::regclass)
       - st.cur_base_bytes
       >= st.rotate_bytes THEN
        SELECT x.n INTO v_next
        FROM generate_series(1, 2) AS g(k), LATERAL (SELECT (st.cur - 1 + g.k) % 3 + 1 AS n) AS x
        WHERE pg_relation_size(format('mbus.%I', mbus.generated_name('relation', 'segment' || x.n,
                                                                     qname))::regclass) = 0
        ORDER BY g.k LIMIT 1;
        -- No empty one: a drained one left untruncated above (a claim's upkeep that may not
        -- truncate) becomes current; autovacuum makes its space reusable.
        IF v_next IS NULL AND cardinality(v_untouched) > 0 THEN
            SELECT x.n INTO v_next
            FROM generate_series(1, 2) AS g(k),
                 LATERAL (SELECT (st.cur - 1 + g.k) % 3 + 1 AS n) AS x
            WHERE x.n = ANY (v_untouched) AND x.n IS DISTINCT FROM st.closing
            ORDER BY g.k LIMIT 1;
        END IF;
    END IF;
    -- A drained segment that stays busy is closed: claims switch to plans that do not name
    -- it, so the transactions holding it end and none take it again (a post committed late
    -- into it is seen by the look above, which reopens it; claims also ignore a closing not
    -- refreshed for 10 seconds, should this upkeep stop).
    v_closing := CASE WHEN st.closing = ANY (v_busy || v_untouched) THEN st.closing
                      WHEN cardinality(v_busy) > 0 THEN v_busy[1] END;
    -- Every call that got this far stamps upkept_at: claims run this call once it is a
    -- second old (the client-independent upkeep, see regenerate_queue).
    UPDATE mbus.queue_segment AS s
    SET cur = coalesce(v_next, s.cur),
        cur_base_bytes = CASE WHEN v_next IS NULL THEN s.cur_base_bytes
                              ELSE pg_relation_size(format('mbus.%I', mbus.generated_name(
                                  'relation', 'segment' || v_next, rotate_queue.qname))::regclass)
                         END,
        rotations = s.rotations + (v_next IS NOT NULL)::integer,
        rotated_at = CASE WHEN v_next IS NOT NULL THEN now() ELSE s.rotated_at END,
        truncations = s.truncations + cardinality(v_truncated),
        closing = v_closing,
        closing_since = CASE WHEN v_closing IS NOT NULL THEN now() END,
        upkept_at = clock_timestamp()
    WHERE s.qname = rotate_queue.qname;
    RETURN jsonb_build_object('current', coalesce(v_next, st.cur), 'rotated', v_next IS NOT NULL,
                              'truncated', to_jsonb(v_truncated), 'busy', to_jsonb(v_busy),
                              'kept', to_jsonb(v_kept), 'closing', v_closing,
                              'expired', v_expired);
END;
$$;
