-- Function: mbus.timer_authenticate(p_api_key)
--
-- Purpose:  timer_authenticate(api_key): the client id owning the key, or NULL.
-- Params:   p_api_key text FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.timer_authenticate(p_api_key text)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT c.id FROM mbus.timer_clients AS c
    WHERE c.key_hash = sha256(convert_to(p_api_key, 'UTF8'));
$$;
