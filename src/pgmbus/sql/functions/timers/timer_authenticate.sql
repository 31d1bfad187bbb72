-- Function: mbus.timer_authenticate(p_api_key)
--
-- Purpose:  The client that owns an API key: the key's sha256 is looked up in
--           mbus.timer_clients (the key itself is never stored).
-- Params:   p_api_key  the API key a request carries (text)
-- Returns:  bigint: the client's id; NULL when no client has that key
-- Locks:    none (reads only)
-- Calls:    none
-- Tables:   mbus.timer_clients
CREATE OR REPLACE FUNCTION mbus.timer_authenticate(p_api_key text)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT c.id FROM mbus.timer_clients AS c
    WHERE c.key_hash = sha256(convert_to(p_api_key, 'UTF8'));
$$;
