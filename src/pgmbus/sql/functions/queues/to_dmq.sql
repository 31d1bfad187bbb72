-- Function: mbus.to_dmq(msg, qname, reason, cname)
--
-- Purpose:  to_dmq(msg, qname, reason, cname): the same for a row as consume returned it.
-- Params:   msg mbus.qt_model FILL
--           qname text FILL
--           reason text DEFAULT 'cannot be processed' FILL
--           cname text DEFAULT NULL FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.to_dmq(msg mbus.qt_model, qname text, reason text DEFAULT 'cannot be processed',
                            cname text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers, properties,
                          data, consume_after, attempts, reason)
    VALUES (qname, cname, msg.id, msg.iid, msg.added, msg.delayed_until, msg.expires, msg.headers,
            msg.properties, msg.data, msg.consume_after, coalesce(msg.attempts, 0),
            coalesce(reason, 'cannot be processed'))
    RETURNING dmq_id INTO v_id;
    RETURN v_id;
END;
$$;
