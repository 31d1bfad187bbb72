-- Function: mbus._reader_lock_key(p_group, p_slot)
--
-- Purpose:  The key of the transaction-level advisory lock that makes one reader at a time read
--           a group's slot: the 64-bit hash of 'mbus.streams.reader:<group>:<slot>'.
-- Params:   p_group  the group's name
--           p_slot   the slot
-- Returns:  bigint: the advisory lock key
-- Locks:    none (computes the key; read_next takes the lock)
-- Callers:  mbus.read_next
CREATE OR REPLACE FUNCTION mbus._reader_lock_key(p_group text, p_slot integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$ SELECT hashtextextended('mbus.streams.reader:' || p_group || ':' || p_slot, 0) $$;
