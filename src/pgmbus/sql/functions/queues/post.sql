-- Function: mbus.post(qname, data, headers, properties, delayed_until, expires, iid)
--
-- Purpose:  post(qname, data, ...): the seed's generic post; returns nothing.
-- Params:   qname text FILL
--           data jsonb FILL
--           headers jsonb DEFAULT NULL FILL
--           properties jsonb DEFAULT NULL FILL
--           delayed_until timestamptz DEFAULT NULL FILL
--           expires timestamptz DEFAULT NULL FILL
--           iid text DEFAULT NULL FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.post(qname text, data jsonb, headers jsonb DEFAULT NULL,
                          properties jsonb DEFAULT NULL, delayed_until timestamptz DEFAULT NULL,
                          expires timestamptz DEFAULT NULL, iid text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5, $6)', 'post_' || qname)
    USING data, headers, properties, delayed_until, expires, iid;
END;
$$;
