-- Function: mbus._capture_row()
--
-- Purpose:  The row trigger of a captured table (AFTER INSERT OR UPDATE OR DELETE FOR EACH ROW):
--           each change, from any statement, appends one event in the transaction that made it.
--           Payload: {"op", "table", "key": {primary key}, "row": {captured columns}, "changed":
--           [columns] (updates), "old_key" (when an update changed the key)}; an update of no
--           captured column appends nothing. Event key: the primary key's value (JSON text when
--           composite; NULL without one). "table" is the captured table (TG_ARGV[3], read as
--           regclass), not the partition. SECURITY DEFINER (search_path pinned). Notifies
--           'mbus_events' while a reader waits.
-- Params:   none (trigger arguments: TG_ARGV[0] the topic, [1] the key columns as text[],
--           [2] the captured columns as text[] or '*' for all, [3] the captured table's oid)
-- Returns:  trigger: NULL (an AFTER trigger); MB009 when the log is not this cluster's; MB008
--           when a key or captured column was renamed or dropped since capture_table, MB005
--           when the event's payload would nest more than 100 levels (the write is refused: a
--           change never goes unpublished)
-- Locks:    none beyond the INSERT into mbus.events (ROW EXCLUSIVE)
-- Calls:    mbus._check_log, mbus.json_too_deep
-- Tables:   mbus.events, mbus.stream_waiter
-- Design:   docs/DESIGN.md#_capture_row-one-event-per-change
CREATE OR REPLACE FUNCTION mbus._capture_row()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_topic   text := TG_ARGV[0];
    v_keys    text[] := TG_ARGV[1]::text[];
    v_cols    text[] := nullif(TG_ARGV[2], '*')::text[];
    v_new     jsonb;
    v_old     jsonb;
    v_row     jsonb;
    v_key     jsonb;
    v_old_key jsonb;
    v_changed text[];
    v_payload jsonb;
BEGIN
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes' THEN
        PERFORM mbus._check_log();
    END IF;
    IF TG_OP <> 'DELETE' THEN
        v_new := to_jsonb(NEW);
    END IF;
    IF TG_OP <> 'INSERT' THEN
        v_old := to_jsonb(OLD);
    END IF;
    v_row := coalesce(v_new, v_old);
    -- The names were fixed when the table was captured: after a RENAME or DROP of a key or
    -- captured column the row no longer has them, and the change would be published with null
    -- keys, or not at all. Refuse the write instead: no change of the table goes unpublished.
    IF NOT (v_row ?& v_keys) OR NOT (v_row ?& coalesce(v_cols, '{}')) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('change capture of %s: column(s) %s renamed or dropped since '
                             'mbus.capture_table', TG_RELID::regclass,
                             array_to_string(ARRAY(SELECT c FROM unnest(v_keys || v_cols) AS c
                                                   WHERE NOT v_row ? c), ', ')),
            HINT = 'run mbus.capture_table on the table again, with the current column names '
                   '(or mbus.stop_capture)';
    END IF;
    SELECT coalesce(jsonb_object_agg(k, v_row -> k), '{}') INTO v_key FROM unnest(v_keys) AS k;
    IF TG_OP = 'UPDATE' THEN
        SELECT coalesce(array_agg(k ORDER BY k), '{}') INTO v_changed
        FROM jsonb_object_keys(v_new) AS k
        WHERE (v_new -> k) IS DISTINCT FROM (v_old -> k)
          AND (v_cols IS NULL OR k = ANY (v_cols) OR k = ANY (v_keys));
        IF cardinality(v_changed) = 0 THEN
            RETURN NULL;
        END IF;
        SELECT coalesce(jsonb_object_agg(k, v_old -> k), '{}') INTO v_old_key
        FROM unnest(v_keys) AS k;
        IF v_old_key = v_key THEN
            v_old_key := NULL;
        END IF;
    END IF;
    IF v_cols IS NOT NULL THEN
        SELECT coalesce(jsonb_object_agg(k, v_row -> k), '{}') INTO v_row
        FROM jsonb_object_keys(v_row) AS k
        WHERE k = ANY (v_cols) OR k = ANY (v_keys);
    END IF;
    v_payload := jsonb_build_object('op', lower(TG_OP),
                                    'table', CASE WHEN TG_NARGS > 3
                                                  THEN TG_ARGV[3]::oid::regclass::text
                                                  ELSE format('%I.%I', TG_TABLE_SCHEMA,
                                                              TG_TABLE_NAME) END,
                                    'key', v_key, 'row', v_row);
    IF TG_OP = 'UPDATE' THEN
        v_payload := v_payload || jsonb_build_object('changed', to_jsonb(v_changed));
        IF v_old_key IS NOT NULL THEN
            v_payload := v_payload || jsonb_build_object('old_key', v_old_key);
        END IF;
    END IF;
    -- Nested deeper than readers can read back (mbus.json_too_deep, as mbus.publish refuses):
    -- published, the event would stop every reader of its groups. Refuse the write instead, as
    -- above. The row sits two levels down in the payload ({"row": {column: value}}).
    IF mbus.json_too_deep(v_payload) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = format('change capture of %s: the row''s JSON is nested too deep for its '
                             'event (more than 100 levels with the payload''s two)',
                             TG_RELID::regclass);
    END IF;
    INSERT INTO mbus.events (topic, key, payload)
    VALUES (v_topic,
            CASE WHEN cardinality(v_keys) = 1 THEN v_key ->> v_keys[1]
                 WHEN cardinality(v_keys) > 1 THEN v_key::text END,
            v_payload);
    IF EXISTS (SELECT 1 FROM mbus.stream_waiter) THEN  -- only while a reader waits (mbus.await_events)
        PERFORM pg_notify('mbus_events', '');
    END IF;
    RETURN NULL;
END;
$$;
