-- Function: mbus.post_batch(qname, data, headers, properties, delayed_until, expires, priority)
--
-- Purpose:  Post many messages in one call; the i-th message has data[i], headers[i] and
--           properties[i], and all share delayed_until and expires. Checks the queue name, then
--           dispatches to the generated postn_<qname>: one INSERT per consumer over all messages in
--           one statement (messages with consume_after go one by one through mbus.post_each).
-- Params:   qname          the queue's name (text)
--           data           the payloads (jsonb[] of objects)
--           headers        headers per message (jsonb[] as long as data, or NULL)
--           properties     properties per message (jsonb[] as long as data, or NULL)
--           delayed_until  not claimable before this time (NULL = at once)
--           expires        never claimed from this time on (NULL = never expires)
--           priority       priority per message (integer[] as long as data, elements 0..32767,
--                          NULL elements = 0; NULL = all 0): higher is claimed first
-- Returns:  SETOF text: the iids, in the order of data; no row for NULL or empty data; MB005/MB006
--           for bad elements or lengths, MB006 for expires not in the future or not after
--           delayed_until, MB008 for a queue without consumers (and triggers); a consumer's
--           selector that raises sends that consumer's copy to mbus.dmq (the batch then goes one
--           by one through post_<qname>)
-- Locks:    those of postn_<qname>: inserts into mbus.q_<qname> and the trigger destinations (ROW
--           EXCLUSIVE on the segment written); a pg_notify only when a session waits
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.post_batch(qname text, data jsonb[], headers jsonb[] DEFAULT NULL,
                                properties jsonb[] DEFAULT NULL,
                                delayed_until timestamptz DEFAULT NULL,
                                expires timestamptz DEFAULT NULL,
                                priority integer[] DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2, $3, $4, $5, $6)',
                                mbus.generated_name('function', 'postn', qname))
    USING data, headers, properties, delayed_until, expires, priority;
END;
$$;
