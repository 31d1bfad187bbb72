-- Function: mbus.exchange_receive(qname, messages)
--
-- Purpose:  The receiving half of one transfer (runs on the destination): post each message of
--           the batch, in order, to queue qname with its own iid, unless this database is in its
--           headers.seenby (it never enters a database twice, so routes both ways cannot loop;
--           counted as 'looped', dropped) or its iid is in mbus.exchange_received (sent again
--           after a crash; counted as 'duplicate'). Accepted iids are recorded in the same
--           transaction as the post. The checks and the post (with the message's priority) are
--           shared with queue moves: mbus.transfer_messages and mbus.transfer_post.
-- Params:   qname     a queue of this database (text)
--           messages  a jsonb array as mbus.exchange_take (mbus.transfer_take) returns it
-- Returns:  jsonb {"accepted": n, "duplicate": n, "looped": n}; MB001/MB002 for a bad or unknown
--           queue, MB006 when messages is not an array, an element has no iid or a bad
--           priority, MB005 for a payload post_<qname> refuses
-- Locks:    inserts into mbus.exchange_received (a concurrent receive of the same iid waits on
--           its primary key until the first commits, then skips it) and those of post_<qname>
-- Calls:    mbus.transfer_messages, mbus.transfer_post
-- Tables:   mbus.exchange_received
CREATE OR REPLACE FUNCTION mbus.exchange_receive(qname text, messages jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    m          record;
    v_accepted integer := 0;
    v_dup      integer := 0;
    v_looped   integer := 0;
BEGIN
    FOR m IN SELECT * FROM mbus.transfer_messages(qname, messages) LOOP
        IF jsonb_typeof(m.message -> 'headers' -> 'seenby') = 'array'
           AND (m.message -> 'headers' -> 'seenby') ? current_database() THEN
            v_looped := v_looped + 1;
            CONTINUE;
        END IF;
        INSERT INTO mbus.exchange_received (iid, source_db)
        VALUES (m.iid, coalesce(m.message -> 'headers' ->> 'source_db', '?'))
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            v_dup := v_dup + 1;
            CONTINUE;
        END IF;
        PERFORM mbus.transfer_post(qname, m.message);
        v_accepted := v_accepted + 1;
    END LOOP;
    RETURN jsonb_build_object('accepted', v_accepted, 'duplicate', v_dup, 'looped', v_looped);
END;
$$;
