-- Function: mbus._reader_lock_key(p_group, p_slot)
--
-- Purpose:  _reader_lock_key(group, slot): the advisory lock key of a group's (slot's) reader.
-- Params:   p_group text FILL
--           p_slot integer FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus._reader_lock_key(p_group text, p_slot integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$ SELECT hashtextextended('mbus.streams.reader:' || p_group || ':' || p_slot, 0) $$;
