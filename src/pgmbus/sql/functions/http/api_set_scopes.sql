-- Function: mbus.api_set_scopes(p_name, p_scopes)
--
-- Purpose:  Replace a client's scopes (sorted, duplicates removed).
-- Params:   p_name    the client's name
--           p_scopes  engine:action:glob strings (empty: the client's own timers only)
-- Returns:  text[]: the scopes stored; MB006 for a malformed scope, MB002 for an unknown client
-- Locks:    the client's row of mbus.timer_clients (UPDATE)
-- Calls:    mbus.api_scopes_valid
-- Tables:   mbus.timer_clients
CREATE OR REPLACE FUNCTION mbus.api_set_scopes(p_name text, p_scopes text[])
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_scopes text[] := ARRAY(SELECT DISTINCT s FROM unnest(coalesce(p_scopes, '{}')) AS s
                             ORDER BY s);
BEGIN
    IF NOT mbus.api_scopes_valid(v_scopes) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid scopes %L', p_scopes),
            HINT = 'a scope is engine:action:glob, engine queues|streams|timers, '
                   'action read|consume|post|write, e.g. queues:post:orders_*';
    END IF;
    UPDATE mbus.timer_clients AS c SET scopes = v_scopes WHERE c.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('timer client %L does not exist', p_name);
    END IF;
    RETURN v_scopes;
END;
$$;
