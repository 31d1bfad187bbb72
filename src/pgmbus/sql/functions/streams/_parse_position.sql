-- Function: mbus._parse_position(p_text)
--
-- Purpose:  Read a cursor's text (the grammar is in mbus._format_position) into its slot and
--           position. Raises MB006 on anything malformed: a NULL, a slot prefix that is not an
--           integer ('99999999999@...'), a wrong number of ';' parts, a part that is not a
--           pg_snapshot, xid8 or bigint, or a hi that does not contain lo.
-- Params:   p_text  the cursor (text), as read_next, current_cursor or group_cursor return it
-- Returns:  record (OUT slot integer: the '<slot>@' prefix or NULL; OUT pos
--           mbus.stream_position); MB006 when malformed
-- Locks:    none
-- Calls:    mbus._snap_contains
-- Tables:   none
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
    v_parts := string_to_array(v_body, ';');
    BEGIN
        IF v_body ~ '^[0-9]+@' THEN
            slot := split_part(v_body, '@', 1)::integer;  -- out of range: MB006 below
            v_body := substr(v_body, position('@' IN v_body) + 1);
            v_parts := string_to_array(v_body, ';');
        END IF;
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
