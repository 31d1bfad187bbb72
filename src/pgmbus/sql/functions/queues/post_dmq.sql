-- Function: mbus.post_dmq(qname, data, headers, properties, iid, reason, cname, attempts)
--
-- Purpose:  Put a message that cannot be processed into mbus.dmq directly, keeping its old iid (the
--           original mbus API's post to the dead-message queue). The queue need not exist (its name
--           must follow the rule); without an iid a new one of qname is made.
-- Params:   qname       the queue the message belongs to (text)
--           data        the payload (jsonb object)
--           headers     headers (jsonb object or NULL)
--           properties  properties (jsonb object or NULL)
--           iid         the message's iid (text; NULL = a new '<qname>.<n>@<database>')
--           reason      why it is dead (text; default and NULL 'cannot be processed')
--           cname       the consumer it was for (text; NULL = none: a replay posts it)
--           attempts    delivery attempts so far (integer; default 0)
-- Returns:  bigint: the dmq_id; MB001 for a bad queue name, MB005 for a payload not an object
-- Locks:    none beyond the INSERT into mbus.dmq
-- Calls:    mbus.check_name, mbus.check_payload
-- Tables:   mbus.dmq
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
