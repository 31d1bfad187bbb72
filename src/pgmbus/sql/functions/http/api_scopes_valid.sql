-- Function: mbus.api_scopes_valid(p_scopes)
--
-- Purpose:  Are these well-formed API key scopes ('engine:action:glob', engine queues|streams|
--           timers, action read|consume|post|write, at most 100)? The same rule as the CHECK on
--           mbus.timer_clients.scopes, as a function for a clear error before the write.
-- Params:   p_scopes  the scopes
-- Returns:  boolean
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.api_scopes_valid(p_scopes text[])
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT cardinality(p_scopes) <= 100 AND NOT EXISTS (
        SELECT 1 FROM unnest(p_scopes) AS s(scope)
        WHERE s.scope IS NULL
           OR s.scope !~ ('^(queues|streams|timers):(read|consume|post|write)'
                          || ':[^[:space:],]{1,200}$'));
$$;
