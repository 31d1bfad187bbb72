-- Function: mbus.spark_next_cursor(p_from, p_to, p_max_events, p_topics, p_before)
--
-- Purpose:  The end of the next micro-batch starting at cursor p_from, at most at the snapshot
--           cursor p_to: at most p_max_events events of p_topics, cut between two events in
--           (txid, id) order in the partial-position form '<lo>;<hi>;<txid>;<id>' (so one huge
--           transaction is split); stopping before the first event published at or after
--           p_before (the archive's horizon). Returns p_from itself when there is nothing to
--           read (no empty batch), the new position when only other topics' events arrived. A
--           partial p_from is finished first. A cut costs the events it passes.
-- Params:   p_from        the batch's start cursor (text; not a slot cursor, MB006)
--           p_to          the newest snapshot cursor to go to (text; its lo snapshot is used)
--           p_max_events  at most this many events (NULL = no limit; MB006 when < 1)
--           p_topics      count only events of these topics (NULL = all)
--           p_before      stop before the first event published at or after it (NULL = none)
-- Returns:  text: the batch's end cursor; p_from when there is nothing to read
-- Locks:    none (reads only)
-- Calls:    mbus._batch, mbus._format_position, mbus._parse_position
-- Tables:   none
-- Design:   docs/DESIGN.md#spark_next_cursor-and-spark_read-ranges-read-by-index
CREATE OR REPLACE FUNCTION mbus.spark_next_cursor(
    p_from text, p_to text, p_max_events integer DEFAULT NULL, p_topics text[] DEFAULT NULL,
    p_before timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
-- The candidates must be read as ordered index range scans whatever the statistics say, and
-- planned once per session (as mbus.read_next does; see there): the newest transaction ids are
-- past the histogram, and a bitmap scan plus sort read a whole transaction for every cut.
SET enable_bitmapscan = off
SET enable_seqscan = off
SET jit = off
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_parsed record;
    v_from   mbus.stream_position;
    v_hi     pg_snapshot;
    v_after_txid xid8;
    v_after_id   bigint;
    v_ended  xid8[];
    v_start  xid8;
    v_limit  integer;  -- p_max_events, kept inside integer with the row after it
    v_n      bigint := 0;
    v_cut    boolean := false;
    v_txid   xid8;
    v_id     bigint;
    r        record;
BEGIN
    IF p_max_events IS NOT NULL AND p_max_events < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('max_events must be at least 1, not %s', p_max_events);
    END IF;
    v_limit := CASE WHEN p_max_events IS NOT NULL THEN least(p_max_events, 2147483646) END;
    v_parsed := mbus._parse_position(p_from);
    IF v_parsed.slot IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'the Spark source reads whole groups, not slots of a slotted group';
    END IF;
    v_from := v_parsed.pos;
    IF v_from.hi IS NOT NULL THEN
        v_hi := v_from.hi;
    ELSE
        v_hi := ((mbus._parse_position(p_to)).pos).lo;
        IF v_hi::text = v_from.lo::text THEN
            RETURN p_from;
        END IF;
    END IF;
    -- events at or before the position are read (only a partial cursor has one)
    v_after_txid := coalesce(CASE WHEN v_from.hi IS NOT NULL THEN v_from.after_txid END, '0'::xid8);
    v_after_id := coalesce(CASE WHEN v_from.hi IS NOT NULL THEN v_from.after_id END, -1);
    v_ended := ARRAY(SELECT x FROM pg_snapshot_xip(v_from.lo) AS x
                     WHERE pg_visible_in_snapshot(x, v_hi) AND x >= v_after_txid);
    v_start := pg_snapshot_xmax(v_from.lo);
    -- With p_before alone the scan runs until the first event published at or after it.
    FOR r IN
        SELECT b.txid, b.id, b.published_at
        FROM mbus._batch(v_ended, v_after_txid, v_after_id, v_start, pg_snapshot_xmax(v_hi),
                         v_hi, p_topics, 0, 1,
                         CASE WHEN p_before IS NULL THEN coalesce(v_limit + 1, 1)
                              ELSE v_limit + 1 END, NULL) AS b
    LOOP
        IF (p_before IS NOT NULL AND r.published_at >= p_before)
           OR (p_max_events IS NOT NULL AND v_n >= p_max_events) THEN
            v_cut := true;
            EXIT;
        END IF;
        v_n := v_n + 1;
        v_txid := r.txid;
        v_id := r.id;
    END LOOP;
    IF v_cut THEN
        IF v_n = 0 THEN
            RETURN p_from;
        END IF;
        RETURN mbus._format_position(ROW(v_from.lo, v_hi, v_txid, v_id));
    END IF;
    IF v_n = 0 THEN
        -- Nothing of ours; move on only if other events passed (else Spark would spin).
        IF p_topics IS NOT NULL AND EXISTS (
            SELECT 1
            FROM mbus._batch(v_ended, v_after_txid, v_after_id, v_start, pg_snapshot_xmax(v_hi),
                             v_hi, NULL, 0, 1, 1, NULL)) THEN
            RETURN mbus._format_position(ROW(v_hi, NULL, NULL, NULL));
        END IF;
        RETURN p_from;
    END IF;
    RETURN mbus._format_position(ROW(v_hi, NULL, NULL, NULL));
END;
$$;
