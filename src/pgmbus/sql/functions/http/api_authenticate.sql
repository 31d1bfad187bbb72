-- Function: mbus.api_authenticate(p_api_key)
--
-- Purpose:  The client owning an API key, with its name and scopes (the HTTP service's
--           authentication; mbus.timer_authenticate gives the id only).
-- Params:   p_api_key  the bearer key as sent
-- Returns:  setof (client_id, name, scopes): one row, or none for an unknown key
-- Locks:    none (reads only)
-- Calls:    none
-- Tables:   mbus.timer_clients
CREATE OR REPLACE FUNCTION mbus.api_authenticate(p_api_key text,
    OUT client_id bigint, OUT name text, OUT scopes text[])
RETURNS SETOF record
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT c.id, c.name, c.scopes FROM mbus.timer_clients AS c
    WHERE c.key_hash = sha256(convert_to(p_api_key, 'UTF8'));
$$;
