-- Function: mbus.publish(topic, payload, key, headers)
--
-- Purpose:  publish(topic, payload, key, headers): append one event in the caller's transaction; it is
--           readable exactly when that transaction commits. Returns the event id.
-- Params:   topic text FILL
--           payload jsonb FILL
--           key text DEFAULT NULL FILL
--           headers jsonb DEFAULT NULL FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.publish(topic text, payload jsonb, key text DEFAULT NULL,
                             headers jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id bigint;
BEGIN
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes' THEN
        PERFORM mbus._check_log();
    END IF;
    IF topic IS NULL OR topic = '' OR octet_length(topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid topic %L (1 to 200 bytes)', topic);
    END IF;
    IF payload IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'payload must not be null';
    END IF;
    IF headers IS NOT NULL AND jsonb_typeof(headers) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = format('headers must be a JSON object, not %s', jsonb_typeof(headers));
    END IF;
    INSERT INTO mbus.events (topic, key, payload, headers)
    VALUES (publish.topic, publish.key, publish.payload, publish.headers)
    RETURNING events.id INTO v_id;
    -- one notification per transaction is enough (the flag is transaction-local)
    IF current_setting('mbus.streams_notified', true) IS DISTINCT FROM 'yes' THEN
        PERFORM pg_notify('mbus_events', ''), set_config('mbus.streams_notified', 'yes', true);
    END IF;
    RETURN v_id;
END;
$$;
