-- Function: mbus.transfer_messages(qname, messages)
--
-- Purpose:  The checks of the receiving half of a transfer, shared by routes
--           (mbus.exchange_receive) and queue moves (mbus.move_receive): the queue exists (first,
--           so a NULL name is refused by name), messages is a jsonb array and every element has
--           an iid. Returns the elements in order, for the caller to apply its own rule against
--           receiving one twice and to post each with mbus.transfer_post.
-- Params:   qname     a queue of this database (text)
--           messages  a jsonb array as mbus.transfer_take returns it
-- Returns:  TABLE (iid text, message jsonb), in array order; MB001/MB002 for a bad or unknown
--           queue, MB006 when messages is not an array or an element has no iid
-- Locks:    none
-- Calls:    mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.transfer_messages(qname text, messages jsonb)
RETURNS TABLE (iid text, message jsonb)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    IF messages IS NULL OR jsonb_typeof(messages) <> 'array' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'messages must be a jsonb array';
    END IF;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(messages) AS e
               WHERE coalesce(e.value ->> 'iid', '') = '') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'a message to receive has no iid';
    END IF;
    RETURN QUERY SELECT e.value ->> 'iid', e.value
                 FROM jsonb_array_elements(messages) WITH ORDINALITY AS e
                 ORDER BY e.ordinality;
END;
$$;
