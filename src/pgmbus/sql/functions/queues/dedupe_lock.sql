-- Function: mbus.dedupe_lock(qname, dedupe_key)
--
-- Purpose:  The dedupe check of a post with a dedupe key: checks the key, takes the key's lock
--           (pg_advisory_xact_lock on (queue, key): posts of one key wait for each other until
--           commit or rollback, so two never both post) and returns the message last posted
--           with the key. The caller (post_<q>) returns that message's iid while one of its
--           deliveries is pending (ready, delayed, leased or waiting for consume_after) and
--           posts otherwise (mbus.dedupe_record). Under REPEATABLE READ a key posted by a
--           transaction that committed after the caller's snapshot makes dedupe_record fail
--           with a serialization failure (40001): retry the transaction.
-- Params:   qname       the queue's name (text)
--           dedupe_key  the key (text, 1 to 200 bytes)
-- Returns:  mbus.queue_dedupe: the row (all NULL when the key has none); MB006 for an empty or
--           too long key
-- Locks:    pg_advisory_xact_lock(hashtextextended('<qname> dedupe <key>', 0)) to the end of the
--           transaction
-- Calls:    none
-- Tables:   mbus.queue_dedupe
CREATE OR REPLACE FUNCTION mbus.dedupe_lock(qname text, dedupe_key text)
RETURNS mbus.queue_dedupe
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_row mbus.queue_dedupe;
BEGIN
    IF dedupe_key = '' OR octet_length(dedupe_key) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'a dedupe_key must be a non-empty text of at most 200 bytes';
    END IF;
    PERFORM pg_advisory_xact_lock(hashtextextended(qname || ' dedupe ' || dedupe_key, 0));
    SELECT d.* INTO v_row FROM mbus.queue_dedupe AS d
    WHERE d.qname = dedupe_lock.qname AND d.dkey = dedupe_lock.dedupe_key;
    RETURN v_row;
END;
$$;
