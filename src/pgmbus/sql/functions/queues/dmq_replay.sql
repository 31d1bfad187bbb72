-- Function: mbus.dmq_replay(dmq_id, qname)
--
-- Purpose:  dmq_replay(dmq_id, qname): put a dead message back, keeping its iid, and remove it from the
--           dmq. It goes to its consumer only when the dmq row names one that still exists (so other
--           consumers do not get it twice), else it is posted to the queue (qname overrides the queue,
--           and then it is always posted). Attempts start again from 0. Returns the iid.
-- Params:   dmq_id bigint FILL
--           qname text DEFAULT NULL FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
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
                                 properties, data, consume_after, attempts)
            VALUES ($1, now(), coalesce(mbus.iid_id($3, $9), $2, nextval('mbus.msg_id_seq')),
                    CASE WHEN mbus.iid_id($3, $9) IS NULL THEN $3 END, now(), NULL, $4,
                    $5, $6, $7, $8, 0)$t$, 'q_' || d.qname)
        USING v_cid, d.id, d.iid, d.expires, d.headers, d.properties, d.data,
              d.consume_after, d.qname;
        PERFORM pg_notify('mbus_q_' || d.qname, d.qname);
    ELSE
        EXECUTE format('SELECT mbus.%I($1, $2, $3, NULL, $4, $5)', 'post_' || coalesce(qname, d.qname))
        USING d.data, d.headers, d.properties, d.expires, d.iid;
    END IF;
    RETURN d.iid;
END;
$$;
