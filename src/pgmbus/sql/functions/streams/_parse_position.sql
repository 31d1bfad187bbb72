-- Function: mbus._parse_position()
--
-- Purpose:  _parse_position(text) -> (slot, position). Raises MB006 on anything malformed.
-- Params:   none
-- Returns:  FILL
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._parse_position(p_text text, OUT slot integer, OUT pos mbus.stream_position)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_parts text[];
    v_body  text := p_text;
BEGIN
    IF p_text IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'cursor must not be null';
    END IF;
    IF v_body ~ '^[0-9]+@' THEN
        slot := split_part(v_body, '@', 1)::integer;
        v_body := substr(v_body, position('@' IN v_body) + 1);
    END IF;
    v_parts := string_to_array(v_body, ';');
    BEGIN
        IF cardinality(v_parts) = 1 THEN
            pos := ROW(v_parts[1]::pg_snapshot, NULL, NULL, NULL)::mbus.stream_position;
        ELSIF cardinality(v_parts) = 4 THEN
            pos := ROW(v_parts[1]::pg_snapshot, v_parts[2]::pg_snapshot, v_parts[3]::xid8,
                       v_parts[4]::bigint)::mbus.stream_position;
        ELSE
            RAISE EXCEPTION 'wrong number of parts';
        END IF;
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('malformed stream cursor %L', p_text),
            HINT = 'use a cursor returned by mbus.read_next, current_cursor or group_cursor';
    END;
    IF pos.hi IS NOT NULL AND NOT mbus._snap_contains(pos.hi, pos.lo) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('malformed stream cursor %L (its target is behind its start)', p_text);
    END IF;
END;
$$;
