-- Function: mbus.exchange_receive(qname, messages)
--
-- Purpose:  The receiving half of one transfer (runs on the destination): post each message of
--           the batch, in order, to queue qname with its own iid, unless
--             * this database is in its headers.seenby already: it never enters a database twice
--               (routes both ways cannot loop), it is counted as 'looped' and dropped; or
--             * its iid is in mbus.exchange_received: it was received before (the mover crashed
--               after this side committed and sent the batch again), counted as 'duplicate'.
--           Accepted iids are recorded in mbus.exchange_received in the same transaction as the
--           post, so "received" and "posted" commit together. post_<qname> appends this
--           database to seenby and keeps source_db (mbus.stamp_headers).
-- Params:   qname     a queue of this database (text)
--           messages  a jsonb array as mbus.exchange_take returns it
-- Returns:  jsonb {"accepted": n, "duplicate": n, "looped": n}; MB001/MB002 for a bad or unknown
--           queue, MB006 when messages is not an array or an element has no iid, MB005 for a
--           payload post_<qname> refuses
-- Locks:    inserts into mbus.exchange_received (a concurrent receive of the same iid waits on
--           its primary key until the first commits, then skips it) and those of post_<qname>
-- Callers:  pgmbus.exchange.bridge (the mover) via sql/exchange.sql 'receive'; tests
--           tests/exchange
CREATE OR REPLACE FUNCTION mbus.exchange_receive(qname text, messages jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    m          jsonb;
    v_post     text;
    v_accepted integer := 0;
    v_dup      integer := 0;
    v_looped   integer := 0;
    v_iid      text;
BEGIN
    PERFORM mbus.require_queue(qname);  -- first: format's %I failed on a NULL name (22004)
    v_post := format('SELECT mbus.%I($1, $2, $3, $4, $5, $6)', mbus.generated_name('function', 'post', qname));
    IF messages IS NULL OR jsonb_typeof(messages) <> 'array' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'messages must be a jsonb array';
    END IF;
    FOR m IN SELECT e.value FROM jsonb_array_elements(messages) WITH ORDINALITY AS e
             ORDER BY e.ordinality LOOP
        v_iid := m ->> 'iid';
        IF v_iid IS NULL OR v_iid = '' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'a message to receive has no iid';
        END IF;
        IF jsonb_typeof(m -> 'headers' -> 'seenby') = 'array'
           AND (m -> 'headers' -> 'seenby') ? current_database() THEN
            v_looped := v_looped + 1;
            CONTINUE;
        END IF;
        INSERT INTO mbus.exchange_received (iid, source_db)
        VALUES (v_iid, coalesce(m -> 'headers' ->> 'source_db', '?'))
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            v_dup := v_dup + 1;
            CONTINUE;
        END IF;
        EXECUTE v_post USING m -> 'data', m -> 'headers',
            CASE WHEN jsonb_typeof(m -> 'properties') = 'object' THEN m -> 'properties' END,
            (m ->> 'delayed_until')::timestamptz, (m ->> 'expires')::timestamptz, v_iid;
        v_accepted := v_accepted + 1;
    END LOOP;
    RETURN jsonb_build_object('accepted', v_accepted, 'duplicate', v_dup, 'looped', v_looped);
END;
$$;
