-- Function: mbus.dmq_replay(dmq_id, qname)
--
-- Purpose:  Put a dead message back, keeping its iid, and remove it from the dmq: to its
--           consumer, due at once, when the dmq row names one that still exists; else posted
--           through post_<queue> (qname overrides the queue, and then it is always posted), its
--           mbus.client_iids row deleted first so the window of idempotent posts does not swallow
--           it. Attempts start again from 0; the priority is the one it died with. Waiters on its
--           iid stay waiting: the copy is marked, so its consume releases them.
-- Params:   dmq_id  the dead message's id in mbus.dmq (bigint)
--           qname   the queue to post it to instead (text; NULL = its own queue)
-- Returns:  text: the iid; MB002 when the dead message or the queue does not exist
-- Locks:    row lock of the mbus.dmq row (DELETE; a concurrent replay of it waits, then raises
--           MB002); the insert into mbus.q_<queue> or post_<queue>'s locks; the dmq delete queues
--           the deferred dmq_dep_gone trigger (mbus.release_deps at commit)
-- Calls:    mbus.generated_name, mbus.iid_id, mbus.require_queue
-- Tables:   mbus.client_iids, mbus.consumer, mbus.dmq, mbus.queue_segment
CREATE OR REPLACE FUNCTION mbus.dmq_replay(dmq_id bigint, qname text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    d     mbus.dmq;
    v_cid integer;
BEGIN
    DELETE FROM mbus.dmq AS x WHERE x.dmq_id = dmq_replay.dmq_id RETURNING x.* INTO d;
    IF d.dmq_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('dead message %s does not exist', dmq_id);
    END IF;
    IF qname IS NULL THEN
        SELECT c.cid INTO v_cid FROM mbus.consumer AS c WHERE c.qname = d.qname AND c.cname = d.cname;
    END IF;
    PERFORM mbus.require_queue(coalesce(qname, d.qname));
    IF v_cid IS NOT NULL THEN
        EXECUTE format($t$
            INSERT INTO mbus.%I (c, vt, id, iid, added, delayed_until, expires, headers,
                                 properties, data, consume_after, attempts, priority)
            VALUES ($1, now(), coalesce(mbus.iid_id($3, $9), $2, nextval('mbus.msg_id_seq')),
                    CASE WHEN mbus.iid_id($3, $9) IS NULL THEN $3 END, now(), NULL, $4,
                    $5, $6, $7, $8, 0, $10)$t$, mbus.generated_name('relation', 'table', d.qname))
        USING v_cid, d.id, d.iid, d.expires, d.headers, d.properties, d.data,
              d.consume_after, d.qname, d.priority;
        IF d.priority > 0 THEN  -- claims of the queue must take the priority tier
            UPDATE mbus.queue_segment AS s SET prioritized = true
            WHERE s.qname = d.qname AND NOT s.prioritized;
        END IF;
        PERFORM pg_notify('mbus_q_' || d.qname, d.qname);
    ELSE
        -- a replay is a new post of the iid, not a producer's retry: forget it first
        DELETE FROM mbus.client_iids AS ci
        WHERE ci.qname = coalesce(dmq_replay.qname, d.qname) AND ci.iid = d.iid;
        EXECUTE format('SELECT mbus.%I($1, $2, $3, NULL, $4, $5, priority => $6)',
                       mbus.generated_name('function', 'post', coalesce(qname, d.qname)))
        USING d.data, d.headers, d.properties, d.expires, d.iid, d.priority;
    END IF;
    RETURN d.iid;
END;
$$;
