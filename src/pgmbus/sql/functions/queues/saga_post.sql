-- Function: mbus.saga_post(qname, data, headers, delayed_until, iid)
--
-- Purpose:  Post one saga message through post_<qname> (no properties, no expiry) and return its
--           iid; the saga functions use it because the generic mbus.post returns nothing.
-- Params:   qname          the queue's name (text)
--           data           the payload (jsonb object)
--           headers        headers, with consume_after and saga (jsonb object or NULL)
--           delayed_until  not claimable before this time (NULL = at once; 'infinity')
--           iid            the message's iid (text; NULL = a new one)
-- Returns:  text: the iid; MB001/MB002 for a bad or unknown queue
-- Locks:    those of post_<qname> (with consume_after, mbus.await_deps's row locks)
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.saga_post(qname text, data jsonb, headers jsonb,
                               delayed_until timestamptz DEFAULT NULL, iid text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v text;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, NULL, $3, NULL, $4)',
                   mbus.generated_name('function', 'post', qname))
    INTO v USING data, headers, delayed_until, iid;
    RETURN v;
END;
$$;
