-- Function: mbus.post_batch(qname, data, headers, properties, delayed_until, expires)
--
-- Purpose:  post_batch(qname, data[], headers[], properties[], delayed_until, expires): many messages in
--           one call; returns their iids in the order of data.
-- Params:   qname text FILL
--           data jsonb[] FILL
--           headers jsonb[] DEFAULT NULL FILL
--           properties jsonb[] DEFAULT NULL FILL
--           delayed_until timestamptz DEFAULT NULL FILL
--           expires timestamptz DEFAULT NULL FILL
-- Returns:  SETOF text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.post_batch(qname text, data jsonb[], headers jsonb[] DEFAULT NULL,
                                properties jsonb[] DEFAULT NULL,
                                delayed_until timestamptz DEFAULT NULL,
                                expires timestamptz DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2, $3, $4, $5)', 'postn_' || qname)
    USING data, headers, properties, delayed_until, expires;
END;
$$;
