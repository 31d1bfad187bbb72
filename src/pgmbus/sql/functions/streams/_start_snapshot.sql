-- Function: mbus._start_snapshot(p_start)
--
-- Purpose:  The snapshot a group positioned at p_start starts from: 'now' (or NULL) is the current
--           snapshot; 'beginning' is '1:1:', in which no event is visible (everything is unread);
--           an event id (digits) or a timestamp cuts the current snapshot at the smallest
--           transaction id of the events with an id at or after it (published at or after it),
--           so those events are unread again. The cut falls between transactions, never inside
--           one, so events of transactions that began before the target may be read again too.
--           Events rewritten by repair_after_restore all carry transaction id 1, so a target
--           among them replays the whole log from the beginning.
-- Params:   p_start  'beginning', 'now' (or NULL), an event id as digits, or a timestamp (text)
-- Returns:  pg_snapshot; MB006 for any other text
-- Locks:    none (reads mbus.events)
-- Calls:    mbus._snapshot_cut, mbus._snapshot_now
-- Tables:   mbus.events
CREATE OR REPLACE FUNCTION mbus._start_snapshot(p_start text)
RETURNS pg_snapshot
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now  pg_snapshot := mbus._snapshot_now();
    v_ts   timestamptz;
    v_cut  xid8;
BEGIN
    IF p_start IS NULL OR p_start = 'now' THEN
        RETURN v_now;
    ELSIF p_start = 'beginning' THEN
        RETURN '1:1:'::pg_snapshot;
    ELSIF p_start ~ '^[0-9]+$' THEN
        SELECT min(e.txid) INTO v_cut FROM mbus.events AS e WHERE e.id >= p_start::bigint;
    ELSE
        BEGIN
            v_ts := p_start::timestamptz;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('invalid start %L', p_start),
                HINT = 'use ''beginning'', ''now'', a timestamp or an event id';
        END;
        SELECT min(e.txid) INTO v_cut FROM mbus.events AS e WHERE e.published_at >= v_ts;
    END IF;
    RETURN mbus._snapshot_cut(v_now, coalesce(v_cut, pg_snapshot_xmax(v_now)));
END;
$$;
