-- Function: mbus.post(qname, data, headers, properties, delayed_until, expires, iid, dedupe_key,
--                     consume_after, priority)
--
-- Purpose:  Post one message to a queue: the original mbus API's generic post, which returns
--           nothing (the generated post_<qname> it dispatches to returns the iid). Checks the queue
--           name, then calls post_<qname>: one delivery row per consumer whose selector holds,
--           copies to the queues of the triggers from qname, a wait while headers consume_after
--           names iids that still exist; it all exists when the caller commits.
-- Params:   qname          the queue's name (text)
--           data           the payload (jsonb object; MB005 else)
--           headers        headers (jsonb object or NULL; mbus.stamp_headers completes them)
--           properties     properties selectors test (jsonb object or NULL)
--           delayed_until  not claimable before this time (NULL = at once)
--           expires        never claimed from this time on (NULL = never expires)
--           iid            the message's iid (NULL = a new '<qname>.<n>@<database>'); when that
--                          iid was posted to the queue within queues.iid_window (consumed or
--                          not), or a message with it is pending, the post does nothing
--                          (idempotent); one of the generated form must come from get_iid
--           dedupe_key     at most one pending message per key and queue: while a message
--                          posted with this key is pending, the post does nothing (post_<qname>
--                          returns that message's iid); NULL = no key
--           consume_after  the iid (text) or iids (text[]) this message waits for, as the seed
--                          writes it (consume_after := array[iid1, iid2]); merged with
--                          headers.consume_after
--           priority       0..32767 (default 0): higher is claimed first, FIFO within one
--                          priority (NULL = 0)
-- Returns:  void; MB001/MB002 for a bad or unknown queue, MB005 for a payload not an object,
--           MB006 for a forged or malformed iid or dedupe_key, a priority out of
--           0..32767, expires not in the future or not after
--           delayed_until, MB008 for a queue without consumers (and triggers)
-- Locks:    those of post_<qname>: inserts into mbus.q_<qname> (ROW EXCLUSIVE on its current
--           segment, or segment 0 for deliveries due in more than a minute) and into the trigger
--           destinations; with consume_after, mbus.await_deps's row locks; with an iid, its
--           new (or renewed) row of mbus.client_iids to the end of the transaction (a second post
--           of that iid waits); a pg_notify only when a session waits on the queue
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.post(qname text, data jsonb, headers jsonb DEFAULT NULL,
                          properties jsonb DEFAULT NULL, delayed_until timestamptz DEFAULT NULL,
                          expires timestamptz DEFAULT NULL, iid text DEFAULT NULL,
                          dedupe_key text DEFAULT NULL,
                          consume_after anycompatible DEFAULT NULL::text,
                          priority integer DEFAULT 0)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5, $6, dedupe_key => $7, consume_after => $8, '
                   'priority => $9)',
                   mbus.generated_name('function', 'post', qname))
    USING data, headers, properties, delayed_until, expires, iid, dedupe_key, consume_after, priority;
END;
$$;
