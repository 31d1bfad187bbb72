-- Function: mbus.key_slot(p_key, p_id, nslots)
--
-- Purpose:  key_slot(key, id, nslots): the slot of an event in a group split by key hash. Events
--           without a key are spread by id.
-- Params:   p_key text FILL
--           p_id bigint FILL
--           nslots integer FILL
-- Returns:  integer
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.key_slot(p_key text, p_id bigint, nslots integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ((hashtextextended(coalesce(p_key, p_id::text), 0) & 9223372036854775807)
            % nslots)::integer;
$$;
