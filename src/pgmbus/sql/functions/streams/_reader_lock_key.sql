-- Function: mbus._reader_lock_key(p_group, p_slot)
--
-- Purpose:  The key of the transaction-level advisory lock that makes one reader at a time read
--           a group's slot: the 64-bit hash of 'mbus.streams.reader:<group>:<slot>'.
-- Params:   p_group  the group's name
--           p_slot   the slot
-- Returns:  bigint: the advisory lock key
-- Locks:    none (computes the key; read_next takes the lock)
-- Calls:    none
-- Tables:   none
-- Inlined into the caller: every operator is immutable (the slot is cast to text explicitly;
-- text || integer is anytextcat, which is only stable, and an IMMUTABLE SQL function whose body
-- is less than immutable is called, not inlined: planned again on every call). The key is the
-- same string as before, so readers of an older release still exclude each other.
CREATE OR REPLACE FUNCTION mbus._reader_lock_key(p_group text, p_slot integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$ SELECT hashtextextended('mbus.streams.reader:' || p_group || ':' || p_slot::text, 0) $$;
