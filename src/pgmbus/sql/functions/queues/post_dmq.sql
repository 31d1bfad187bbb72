-- Function: mbus.post_dmq(qname, data, headers, properties, iid, reason, cname, attempts)
--
-- Purpose:  post_dmq(qname, data, headers, properties, iid, reason, cname): put a message that cannot be
--           processed into mbus.dmq, keeping its old iid (the seed). Returns the dmq id.
-- Params:   qname text FILL
--           data jsonb FILL
--           headers jsonb DEFAULT NULL FILL
--           properties jsonb DEFAULT NULL FILL
--           iid text DEFAULT NULL FILL
--           reason text DEFAULT 'cannot be processed' FILL
--           cname text DEFAULT NULL FILL
--           attempts integer DEFAULT 0 FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.post_dmq(qname text, data jsonb, headers jsonb DEFAULT NULL,
                              properties jsonb DEFAULT NULL, iid text DEFAULT NULL,
                              reason text DEFAULT 'cannot be processed', cname text DEFAULT NULL,
                              attempts integer DEFAULT 0)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    PERFORM mbus.check_payload('data', data, false);
    PERFORM mbus.check_payload('headers', headers);
    PERFORM mbus.check_payload('properties', properties);
    INSERT INTO mbus.dmq (qname, cname, iid, added, headers, properties, data, attempts, reason)
    VALUES (qname, cname, coalesce(iid, format('%s.%s@%s', qname, nextval('mbus.msg_id_seq'),
                                                  current_database())),
            now(), headers, properties, data, coalesce(attempts, 0),
            coalesce(reason, 'cannot be processed'))
    RETURNING dmq_id INTO v_id;
    RETURN v_id;
END;
$$;
