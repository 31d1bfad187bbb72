-- Function: mbus.read_next("group", max_events, slot)
--
-- Purpose:  The group's (slot's) next batch, at most max_events events, without moving the
--           group: the events whose transaction is visible in a newer snapshot (hi) and not in
--           the group's position (lo), in (txid, id) order. Every row carries the cursor that
--           commit(group, cursor) moves to: '<hi>' when the batch holds the rest, else
--           '<lo>;<hi>;<txid>;<id>' of its last row. The group (slot) stays locked until the
--           caller's transaction ends (on_busy 'wait' or 'skip'), so reading, writing results
--           and committing in one transaction processes each event once. An empty batch moves
--           the group on by itself.
-- Params:   "group"     the group's name
--           max_events  the most events returned (integer >= 1; 1000 unless given)
--           slot        the slot to read (NULL = the only slot of an unslotted group)
-- Returns:  TABLE (cursor text, id bigint, topic text, key text, payload jsonb, headers jsonb,
--           published_at timestamptz), in (txid, id) order; no row when the group has caught up
--           or another reader holds it (on_busy 'skip'); MB002/MB008 for an unknown or expired
--           group, MB006 for a bad max_events or slot, MB009 when the log is not this cluster's
-- Locks:    pg_advisory_xact_lock(mbus._reader_lock_key(group, slot)), or
--           pg_try_advisory_xact_lock when on_busy is 'skip', held to the end of the caller's
--           transaction (the lock is not a row lock, so reading stays a read-only transaction);
--           after an empty batch, the slot's row of mbus.stream_cursors (UPDATE)
-- Calls:    mbus._batch, mbus._check_log, mbus._format_position, mbus._group,
--           mbus._reader_lock_key, mbus._slot_of, mbus._snapshot_cut, mbus._snapshot_now
-- Tables:   mbus.stream_cursors, mbus.stream_groups
-- Design:   docs/DESIGN.md#read_next-snapshots-and-two-range-scans
CREATE OR REPLACE FUNCTION mbus.read_next("group" text, max_events integer DEFAULT 1000,
                               slot integer DEFAULT NULL)
RETURNS TABLE (cursor text, id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog
-- The batch must be read as an ordered range scan of the (txid, id) index whatever the
-- statistics say: the newest transaction ids are always past the histogram, and a bitmap scan
-- plus sort chosen from a low estimate would read the whole backlog for every batch.
SET enable_bitmapscan = off
SET enable_seqscan = off
-- Disabled scans add their disable_cost to any plan that still has one (a small table), which
-- lifts the estimate past jit_above_cost: every call JIT-compiled its queries (240 ms on a new
-- session, 70 ms after, for a 20-event batch of a slotted group: past a 300 ms statement_timeout
-- under load, found by the chaos suite). The batch is an index range scan: nothing to compile.
SET jit = off
-- Plan once per session, not per call: planning the two batch scans (the inlined _batch, a
-- UNION ALL over every partition of mbus.events) cost ~0.9 ms per call, more than reading 1,000
-- events. The generic plan is the same ordered index range scan (the scans above are off), so
-- nothing depends on the values of one call.
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    g        mbus.stream_groups;
    c        mbus.stream_cursors;
    v_slot   integer;
    v_hi     pg_snapshot;
    v_after_txid xid8;
    v_after_id   bigint;
    v_ended  xid8[];
    v_n      bigint;
    v_from   xid8;
    v_to     xid8;
    v_more   boolean;
    v_edge_txid xid8;
    v_edge_id   bigint;
    v_cursor text;
    v_limit  integer;
BEGIN
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes' THEN
        PERFORM mbus._check_log();  -- once per session (see mbus._check_log)
    END IF;
    IF max_events IS NULL OR max_events < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('max_events must be at least 1, not %s', max_events);
    END IF;
    -- one row past the batch is read: keep max_events + 1 inside integer (no batch is that big)
    v_limit := least(max_events, 2147483646);
    g := mbus._group("group");
    v_slot := mbus._slot_of(g, slot);
    -- The reader's lock (Wiki PubSub's lock_watermark) is a transaction-level advisory lock, not
    -- a row lock: reading then stays a read-only transaction until the commit.
    IF g.on_busy = 'skip' THEN
        IF NOT pg_try_advisory_xact_lock(mbus._reader_lock_key(g.name, v_slot)) THEN
            RETURN;
        END IF;
    ELSE
        PERFORM pg_advisory_xact_lock(mbus._reader_lock_key(g.name, v_slot));
    END IF;
    SELECT * INTO c FROM mbus.stream_cursors AS sc
    WHERE sc.group_name = g.name AND sc.slot = v_slot;
    v_hi := c.hi;
    IF v_hi IS NULL THEN
        v_hi := mbus._snapshot_now();
        IF g.ordered THEN
            -- only transactions below the oldest one still running (never behind lo)
            v_hi := mbus._snapshot_cut(v_hi, greatest(pg_snapshot_xmin(v_hi),
                                                      pg_snapshot_xmax(c.lo)));
        END IF;
    END IF;
    v_after_txid := coalesce(c.after_txid, '0'::xid8);
    v_after_id := coalesce(c.after_id, -1);
    v_from := greatest(pg_snapshot_xmax(c.lo), v_after_txid);
    v_to := pg_snapshot_xmax(v_hi);
    v_ended := ARRAY(SELECT x FROM pg_snapshot_xip(c.lo) AS x
                     WHERE pg_visible_in_snapshot(x, v_hi) AND x >= v_after_txid);
    -- Where the batch stops: a row after the first max_events means there is more, and the
    -- cursor then stops inside the batch at row max_events (else it is the whole of hi). The
    -- cursor is formatted once, not per row.
    SELECT count(*) = 2, (array_agg(e.txid ORDER BY e.txid, e.id))[1],
           (array_agg(e.id ORDER BY e.txid, e.id))[1]
    INTO v_more, v_edge_txid, v_edge_id
    FROM (SELECT b.txid, b.id
          FROM mbus._batch(v_ended, v_after_txid, v_after_id, v_from, v_to, v_hi, g.topics,
                           v_slot, g.slots, v_limit + 1, g.name) AS b
          ORDER BY b.txid, b.id
          OFFSET v_limit - 1) AS e;
    v_cursor := mbus._format_position(
        CASE WHEN v_more THEN ROW(c.lo, v_hi, v_edge_txid, v_edge_id)::mbus.stream_position
             ELSE ROW(v_hi, NULL, NULL, NULL)::mbus.stream_position END,
        CASE WHEN g.slots > 1 THEN v_slot END);
    -- The rows, bounded by the edge as well as by the limit: under READ COMMITTED this is a new
    -- snapshot, and a row the first scan saw may be gone (retention); the rows returned then
    -- still end at the cursor, never past it.
    RETURN QUERY
    SELECT v_cursor, b.id, b.topic, b.key, b.payload, b.headers, b.published_at
    FROM mbus._batch(v_ended, v_after_txid, v_after_id, v_from, v_to, v_hi, g.topics, v_slot,
                     g.slots, v_limit, g.name) AS b
    WHERE NOT v_more OR (b.txid, b.id) <= (v_edge_txid, v_edge_id)
    ORDER BY b.txid, b.id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n = 0 AND NOT v_more AND (c.hi IS NOT NULL OR c.lo::text <> v_hi::text) THEN
        -- an empty batch: nothing to acknowledge, the group moves on by itself (not when the
        -- first scan saw more rows than the second returned: rows past the edge remain)
        UPDATE mbus.stream_cursors AS sc
        SET lo = v_hi, hi = NULL, after_txid = NULL, after_id = NULL,
            lo_taken_at = now(), committed_at = now()
        WHERE sc.group_name = g.name AND sc.slot = v_slot;
    END IF;
END;
$$;
