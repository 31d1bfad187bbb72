-- Function: mbus.exchange_receive_topic(topic, events)
--
-- Purpose:  The receiving half of one transfer of a topic route (runs on the destination):
--           publish each event of the batch, in order, to topic with its key and payload,
--           unless this database is in its headers.seenby already (counted 'looped', dropped:
--           routes both ways cannot loop) or its eid is in mbus.exchange_received (received
--           before, the mover crashed after this side committed: 'duplicate'). Accepted eids are
--           recorded in the same transaction as the publish; the published headers are the
--           event's with this database appended to seenby and eid set, source_db kept.
-- Params:   topic   a topic of this database (text, 1 to 200 bytes)
--           events  the "events" array of mbus.exchange_take_topic
-- Returns:  jsonb {"accepted": n, "duplicate": n, "looped": n}; MB006 for a bad topic, a
--           non-array or an element without eid, MB005 for an event mbus.publish refuses
-- Locks:    inserts into mbus.exchange_received and those of mbus.publish
-- Calls:    mbus.publish
-- Tables:   mbus.exchange_received
CREATE OR REPLACE FUNCTION mbus.exchange_receive_topic(topic text, events jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    e          jsonb;
    v_accepted integer := 0;
    v_dup      integer := 0;
    v_looped   integer := 0;
    v_eid      text;
    v_seen     jsonb;
BEGIN
    IF topic IS NULL OR topic = '' OR octet_length(topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('invalid topic %L', topic);
    END IF;
    IF events IS NULL OR jsonb_typeof(events) <> 'array' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'events must be a jsonb array';
    END IF;
    FOR e IN SELECT x.value FROM jsonb_array_elements(events) WITH ORDINALITY AS x
             ORDER BY x.ordinality LOOP
        v_eid := e ->> 'eid';
        IF v_eid IS NULL OR v_eid = '' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'an event to receive has no eid';
        END IF;
        v_seen := CASE WHEN jsonb_typeof(e -> 'headers' -> 'seenby') = 'array'
                       THEN e -> 'headers' -> 'seenby' ELSE '[]'::jsonb END;
        IF v_seen ? current_database() THEN
            v_looped := v_looped + 1;
            CONTINUE;
        END IF;
        INSERT INTO mbus.exchange_received (iid, source_db)
        VALUES (v_eid, coalesce(e -> 'headers' ->> 'source_db', '?'))
        ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            v_dup := v_dup + 1;
            CONTINUE;
        END IF;
        PERFORM mbus.publish(topic, e -> 'payload', e ->> 'key',
            CASE WHEN jsonb_typeof(e -> 'headers') = 'object' THEN e -> 'headers' ELSE '{}' END
            || jsonb_build_object('seenby', v_seen || to_jsonb(current_database()), 'eid', v_eid));
        v_accepted := v_accepted + 1;
    END LOOP;
    RETURN jsonb_build_object('accepted', v_accepted, 'duplicate', v_dup, 'looped', v_looped);
END;
$$;
