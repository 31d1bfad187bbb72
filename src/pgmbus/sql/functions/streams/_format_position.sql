-- Function: mbus._format_position(p, p_slot)
--
-- Purpose:  FILL
-- Params:   p mbus.stream_position FILL
--           p_slot integer DEFAULT NULL FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._format_position(p mbus.stream_position, p_slot integer DEFAULT NULL)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_slot IS NULL THEN '' ELSE p_slot::text || '@' END
        || CASE WHEN (p).hi IS NULL THEN (p).lo::text
                ELSE concat_ws(';', (p).lo, (p).hi, (p).after_txid, (p).after_id) END;
$$;
