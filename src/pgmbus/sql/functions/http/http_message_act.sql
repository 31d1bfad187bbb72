-- Function: mbus.http_message_act(p_queue, p_iid, p_action, p_consumer, p_reason)
--
-- Purpose:  An operator's action on one message of a queue, from the dashboard: 'delete' its
--           deliveries and dead copies, 'bury' its deliveries (to mbus.dmq with p_reason),
--           'release' its leases (claimable again at once, attempts kept) or 'replay' its dead
--           copies (mbus.dmq_replay). p_consumer limits it to one consumer's delivery. Only
--           mbus.q_<p_queue> and this queue's dmq rows are touched, so an iid of another queue
--           is not found. The deliveries are locked first (a claim in flight finishes first);
--           delete and bury refuse a leased delivery (its worker holds it: release it first),
--           and every refusal raises before anything changed.
-- Params:   p_queue     the queue
--           p_iid       the message's iid
--           p_action    delete | bury | release | replay
--           p_consumer  only this consumer's delivery (NULL = every consumer's)
--           p_reason    bury's reason (NULL = 'buried by an operator')
-- Returns:  integer: the deliveries or dead copies changed; MB002 when the queue holds no such
--           message, MB008 when its state does not allow the action, MB006 for another action
-- Locks:    the message's delivery rows of mbus.q_<p_queue> (FOR UPDATE) and its dmq rows (FOR
--           UPDATE), then those of the change (DELETE/UPDATE, mbus.dmq_replay's)
-- Calls:    mbus.dmq_replay, mbus.generated_name, mbus.iid_id, mbus.require_consumer,
--           mbus.require_queue
-- Tables:   mbus.consumer, mbus.dmq
CREATE OR REPLACE FUNCTION mbus.http_message_act(p_queue text, p_iid text, p_action text,
                                                 p_consumer text DEFAULT NULL,
                                                 p_reason text DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id     bigint := mbus.iid_id(p_iid, p_queue);
    v_tbl    text;
    v_cid    integer;
    v_live   integer;
    v_leased integer;
    v_dead   bigint[];
    v_n      integer := 0;
    v_one    bigint;
BEGIN
    PERFORM mbus.require_queue(p_queue);
    IF p_action IS NULL OR p_action NOT IN ('delete', 'bury', 'release', 'replay') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('action must be delete, bury, release or replay, not %L', p_action);
    END IF;
    IF p_consumer IS NOT NULL THEN
        PERFORM mbus.require_consumer(p_queue, p_consumer);
        SELECT x.cid INTO v_cid FROM mbus.consumer AS x
        WHERE x.qname = p_queue AND x.cname = p_consumer;
    END IF;
    v_tbl := mbus.generated_name('relation', 'table', p_queue);
    -- each statement below finds the message's deliveries (of the consumer $3 when given) by
    -- $1, its id, when the iid has this queue's own form (stored as NULL), else by $2, the iid
    EXECUTE format($q$
        SELECT count(*), count(*) FILTER (WHERE s.lease_token IS NOT NULL)
        FROM (SELECT q.lease_token FROM mbus.%I AS q
              WHERE ((($1::bigint IS NOT NULL AND q.id = $1 AND q.iid IS NULL)
                      OR ($1::bigint IS NULL AND q.iid = $2))
                     AND ($3::integer IS NULL OR q.c = $3))
              FOR UPDATE OF q) AS s$q$, v_tbl)
    INTO v_live, v_leased USING v_id, p_iid, v_cid;
    SELECT coalesce(array_agg(d.dmq_id ORDER BY d.dmq_id), '{}') INTO v_dead
    FROM (SELECT x.dmq_id FROM mbus.dmq AS x
          WHERE x.qname = p_queue AND x.iid = p_iid
            AND (p_consumer IS NULL OR x.cname = p_consumer)
          FOR UPDATE) AS d;
    IF v_live = 0 AND cardinality(v_dead) = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('queue %s has no message %s', p_queue, p_iid);
    END IF;
    IF p_action IN ('delete', 'bury') AND v_leased > 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('message %s is leased by a worker: release the lease first', p_iid);
    END IF;
    CASE p_action
    WHEN 'delete' THEN
        EXECUTE format($q$
            DELETE FROM mbus.%I AS q
            WHERE (($1::bigint IS NOT NULL AND q.id = $1 AND q.iid IS NULL)
                   OR ($1::bigint IS NULL AND q.iid = $2))
              AND ($3::integer IS NULL OR q.c = $3)$q$, v_tbl)
        USING v_id, p_iid, v_cid;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        DELETE FROM mbus.dmq AS x WHERE x.dmq_id = ANY (v_dead);
        RETURN v_n + cardinality(v_dead);
    WHEN 'bury' THEN
        IF v_live = 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB008',
                MESSAGE = format('message %s is dead already', p_iid);
        END IF;
        EXECUTE format($q$
            WITH d AS (DELETE FROM mbus.%I AS q
                       WHERE (($1::bigint IS NOT NULL AND q.id = $1 AND q.iid IS NULL)
                              OR ($1::bigint IS NULL AND q.iid = $2))
                         AND ($3::integer IS NULL OR q.c = $3)
                       RETURNING q.*)
            INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                  properties, data, consume_after, attempts, reason, priority)
            SELECT $4, x.cname, d.id, $2, d.added, d.delayed_until, d.expires, d.headers,
                   d.properties, d.data, d.consume_after, d.attempts, $5, d.priority
            FROM d LEFT JOIN mbus.consumer AS x ON x.cid = d.c$q$, v_tbl)
        USING v_id, p_iid, v_cid, p_queue, coalesce(p_reason, 'buried by an operator');
        GET DIAGNOSTICS v_n = ROW_COUNT;
        RETURN v_n;
    WHEN 'release' THEN
        IF v_leased = 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB008',
                MESSAGE = format('message %s is not leased', p_iid);
        END IF;
        EXECUTE format($q$
            UPDATE mbus.%I AS q SET lease_token = NULL, vt = clock_timestamp()
            WHERE q.lease_token IS NOT NULL
              AND (($1::bigint IS NOT NULL AND q.id = $1 AND q.iid IS NULL)
                   OR ($1::bigint IS NULL AND q.iid = $2))
              AND ($3::integer IS NULL OR q.c = $3)$q$, v_tbl)
        USING v_id, p_iid, v_cid;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        PERFORM pg_notify('mbus_q_' || p_queue, p_queue);
        RETURN v_n;
    ELSE  -- replay
        IF cardinality(v_dead) = 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB008',
                MESSAGE = format('message %s is not dead', p_iid);
        END IF;
        FOREACH v_one IN ARRAY v_dead LOOP
            PERFORM mbus.dmq_replay(v_one);
        END LOOP;
        RETURN cardinality(v_dead);
    END CASE;
END;
$$;
