-- Function: mbus.repair_after_restore()
--
-- Purpose:  Make the log consistent in this cluster after pg_dump / pg_restore into another one
--           (stored transaction ids are another cluster's; _check_log raises MB009): each active
--           group's and slot's unconsumed events are queued on its retry path (attempts 0, due
--           now); every event gets transaction id 1; every cursor is put at this cluster's
--           current snapshot and mbus.stream_state records the cluster and time. Pending retries
--           are kept. Expired groups get no redelivery: revive one with seek() to a timestamp.
--           Rewrites every row of the log.
-- Params:   none
-- Returns:  TABLE (group_name text, redelivered bigint): per active group, the events queued
-- Locks:    LOCK TABLE mbus.stream_cursors, mbus.stream_groups IN EXCLUSIVE MODE and mbus.events
--           IN SHARE MODE, held to commit: publishers, readers' commits and group changes wait
--           for the whole repair; row locks of every event (UPDATE), the new retry rows and the
--           row of mbus.stream_state
-- Calls:    mbus._consumed, mbus._snapshot_now, mbus._system_identifier, mbus.key_slot
-- Tables:   mbus.events, mbus.stream_cursors, mbus.stream_groups, mbus.stream_retries,
--           mbus.stream_state
-- Design:   docs/DESIGN.md#repair_after_restore-why-the-steps-work
CREATE OR REPLACE FUNCTION mbus.repair_after_restore()
RETURNS TABLE (group_name text, redelivered bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    g  mbus.stream_groups;
    c  mbus.stream_cursors;
    v_n bigint;
    v_counts jsonb := '{}';
    v_rec    record;
BEGIN
    LOCK TABLE mbus.stream_cursors, mbus.stream_groups IN EXCLUSIVE MODE;
    LOCK TABLE mbus.events IN SHARE MODE;
    FOR v_rec IN
        SELECT sg AS g, sc AS c FROM mbus.stream_groups AS sg
        JOIN mbus.stream_cursors AS sc ON sc.group_name = sg.name
        WHERE sg.state = 'active'
        ORDER BY sg.name, sc.slot
    LOOP
        g := v_rec.g;
        c := v_rec.c;
        INSERT INTO mbus.stream_retries (group_name, event_id, topic, key, payload, headers,
                                         published_at, attempts, next_at, last_error)
        SELECT g.name, e.id, e.topic, e.key, e.payload, e.headers, e.published_at, 0, now(),
               'redelivered by repair-after-restore'
        FROM mbus.events AS e
        WHERE NOT mbus._consumed(e.txid, e.id, ROW(c.lo, c.hi, c.after_txid, c.after_id))
          AND (g.topics IS NULL OR e.topic = ANY (g.topics))
          AND (g.slots = 1 OR mbus.key_slot(e.key, e.id, g.slots) = c.slot)
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_counts := jsonb_set(v_counts, ARRAY[g.name],
                              to_jsonb(coalesce((v_counts ->> g.name)::bigint, 0) + v_n));
    END LOOP;
    UPDATE mbus.events SET txid = '1'::xid8 WHERE txid <> '1'::xid8;
    UPDATE mbus.stream_cursors
    SET lo = mbus._snapshot_now(), hi = NULL, after_txid = NULL, after_id = NULL,
        lo_taken_at = now(), committed_at = now();
    UPDATE mbus.stream_state
    SET system_identifier = mbus._system_identifier(), repaired_at = now();
    PERFORM set_config('mbus.streams_log_ok', 'yes', false);
    RETURN QUERY SELECT k, v::bigint FROM jsonb_each_text(v_counts) AS j (k, v) ORDER BY k;
END;
$$;
