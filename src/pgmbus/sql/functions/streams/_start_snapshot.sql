-- Function: mbus._start_snapshot(p_start)
--
-- Purpose:  _start_snapshot(start): the snapshot a group positioned at 'beginning', 'now', a
--           timestamp, or an event id (digits) starts from.
-- Params:   p_start text FILL
-- Returns:  pg_snapshot
-- Locks:    FILL
-- Callers:  FILL
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
