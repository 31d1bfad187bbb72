-- Function: mbus.post_each(qname, data, headers, properties, delayed_until, expires, priority)
--
-- Purpose:  Post messages one by one through post_<qname>: postn_<qname> hands a batch over when
--           any message has headers.consume_after, whose waits its one-statement insert does not
--           handle, or when a consumer's selector raised in the batch.
-- Params:   qname          the queue's name (text)
--           data           the payloads (jsonb[])
--           headers        headers per message (jsonb[] as long as data, or NULL)
--           properties     properties per message (jsonb[] as long as data, or NULL)
--           delayed_until  not claimable before this time (NULL = at once)
--           expires        never claimed from this time on (NULL = never expires)
--           priority       priority per message (integer[] as long as data, or NULL = all 0)
-- Returns:  SETOF text: the iids, in the order of data
-- Locks:    those of post_<qname> for each message
-- Calls:    mbus.generated_name
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.post_each(qname text, data jsonb[], headers jsonb[], properties jsonb[],
                               delayed_until timestamptz, expires timestamptz,
                               priority integer[] DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    i     integer;
    v_iid text;
BEGIN
    FOR i IN 1 .. cardinality(data) LOOP
        EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5, priority => $6)',
                       mbus.generated_name('function', 'post', qname))
        INTO v_iid
        USING data[i], headers[i], properties[i], delayed_until, expires, coalesce(priority[i], 0);
        RETURN NEXT v_iid;
    END LOOP;
END;
$$;
