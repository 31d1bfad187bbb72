-- Function: mbus.key_slot(p_key, p_id, nslots)
--
-- Purpose:  The slot of an event in a group split by key hash into nslots slots: the 64-bit text
--           hash of the key, made non-negative, modulo nslots, so every event of one key goes to
--           the same slot (and keeps its order there). Events without a key are spread by id. A
--           hot-path SQL helper without SET (see mbus.publish), PARALLEL SAFE.
-- Params:   p_key   the event's key (NULL = no key)
--           p_id    the event's id, hashed instead of a missing key
--           nslots  the number of slots (>= 1)
-- Returns:  integer in 0 .. nslots - 1
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.key_slot(p_key text, p_id bigint, nslots integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ((hashtextextended(coalesce(p_key, p_id::text), 0) & 9223372036854775807)
            % nslots)::integer;
$$;
