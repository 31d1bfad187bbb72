-- Function: mbus.http_message(p_queue, p_iid)
--
-- Purpose:  Everything the dashboard's detail pane shows of one message of a queue, read without
--           locking or leasing: its payloads, each consumer's delivery (state, vt or lease end,
--           attempts, priority), its dead copies in mbus.dmq, what it waits for (consume_after),
--           the route history its headers carry (seenby, source_db, enqueue_time), the queue's
--           triggers and exchange routes, and the saga it belongs to. Only mbus.q_<p_queue> and
--           this queue's dmq rows are looked at: an iid of another queue is not found here.
-- Params:   p_queue  the queue
--           p_iid    the message's iid
-- Returns:  jsonb, or NULL when the queue holds no message (live or dead) with that iid
-- Locks:    none (reads only)
-- Calls:    mbus.generated_name, mbus.iid_id, mbus.require_queue
-- Tables:   mbus.consumer, mbus.dmq, mbus.exchange_route, mbus.msg_dep, mbus.msg_wait,
--           mbus.queue_trigger, mbus.saga, mbus.saga_step
CREATE OR REPLACE FUNCTION mbus.http_message(p_queue text, p_iid text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id    bigint := mbus.iid_id(p_iid, p_queue);
    v_live  jsonb;
    v_dead  jsonb;
    v_first jsonb;
    v_gone  jsonb;
    v_saga  jsonb;
    v_sid   bigint;
BEGIN
    PERFORM mbus.require_queue(p_queue);
    EXECUTE format($q$
        SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'consumer', x.cname, 'id', q.id,
                   'state', CASE WHEN q.lease_token IS NOT NULL THEN 'leased'
                                 WHEN q.vt > clock_timestamp() THEN 'delayed'
                                 ELSE 'ready' END,
                   'vt', q.vt,
                   'lease_until', CASE WHEN q.lease_token IS NOT NULL THEN q.vt END,
                   'waiting', q.vt = 'infinity', 'attempts', q.attempts,
                   'priority', q.priority, 'added', q.added,
                   'delayed_until', q.delayed_until, 'expires', q.expires)
                   ORDER BY x.cname), '[]'),
               (array_agg(jsonb_build_object(
                   'id', q.id, 'headers', q.headers, 'properties', q.properties,
                   'data', q.data, 'consume_after', q.consume_after, 'added', q.added)))[1]
        FROM mbus.%I AS q JOIN mbus.consumer AS x ON x.cid = q.c
        WHERE ($1::bigint IS NOT NULL AND q.id = $1 AND q.iid IS NULL)
           OR ($1::bigint IS NULL AND q.iid = $2)$q$,
        mbus.generated_name('relation', 'table', p_queue))
    INTO v_live, v_first USING v_id, p_iid;
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'dmq_id', d.dmq_id, 'consumer', d.cname, 'reason', d.reason,
               'died_at', d.died_at, 'attempts', d.attempts, 'priority', d.priority)
               ORDER BY d.dmq_id), '[]'),
           (array_agg(jsonb_build_object(
               'id', d.id, 'headers', d.headers, 'properties', d.properties, 'data', d.data,
               'consume_after', d.consume_after, 'added', d.added) ORDER BY d.dmq_id))[1]
    INTO v_dead, v_gone
    FROM mbus.dmq AS d WHERE d.qname = p_queue AND d.iid = p_iid;
    v_first := coalesce(v_first, v_gone);  -- the payloads of a live delivery, else a dead copy
    IF v_first IS NULL THEN
        RETURN NULL;
    END IF;
    v_sid := CASE WHEN v_first -> 'headers' -> 'saga' ->> 'id' ~ '^[0-9]{1,18}$'
                  THEN (v_first -> 'headers' -> 'saga' ->> 'id')::bigint END;
    IF v_sid IS NOT NULL THEN
        SELECT jsonb_build_object(
                   'saga_id', s.saga_id, 'name', s.name, 'state', s.state, 'reason', s.reason,
                   'created_at', s.created_at, 'finished_at', s.finished_at,
                   'step', v_first -> 'headers' -> 'saga' ->> 'step',
                   'steps', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                                 'step', st.step, 'queue', st.qname, 'iid', st.iid,
                                 'done_at', st.done_at, 'compensated_at', st.compensated_at)
                                 ORDER BY st.ord), '[]')
                             FROM mbus.saga_step AS st WHERE st.saga_id = s.saga_id))
        INTO v_saga FROM mbus.saga AS s WHERE s.saga_id = v_sid;
    END IF;
    RETURN v_first || jsonb_build_object(
        'queue', p_queue, 'iid', p_iid, 'deliveries', v_live, 'dead', v_dead,
        'waiting_for', (SELECT coalesce(jsonb_agg(dp.dep_iid ORDER BY dp.dep_iid), '[]')
                        FROM mbus.msg_dep AS dp
                        WHERE dp.qname = p_queue AND dp.id = (v_first ->> 'id')::bigint),
        'waiting_since', (SELECT w.since FROM mbus.msg_wait AS w
                          WHERE w.qname = p_queue AND w.id = (v_first ->> 'id')::bigint),
        'history', jsonb_build_object(
            'seenby', v_first -> 'headers' -> 'seenby',
            'source_db', v_first -> 'headers' -> 'source_db',
            'enqueue_time', v_first -> 'headers' -> 'enqueue_time',
            'destination', v_first -> 'headers' -> 'destination'),
        'triggers_to', (SELECT coalesce(jsonb_agg(t.dst ORDER BY t.dst), '[]')
                        FROM mbus.queue_trigger AS t WHERE t.src = p_queue),
        'routes', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                       'route', r.name, 'link', r.link, 'queue', r.dst_queue,
                       'consumer', r.cname) ORDER BY r.name), '[]')
                   FROM mbus.exchange_route AS r WHERE r.src_queue = p_queue),
        'saga', v_saga);
END;
$$;
