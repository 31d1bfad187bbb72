-- Function: mbus.saga_post(qname, data, headers, delayed_until, iid)
--
-- Purpose:  saga_post(qname, data, headers, delayed_until, iid): post through post_<qname>.
-- Params:   qname text FILL
--           data jsonb FILL
--           headers jsonb FILL
--           delayed_until timestamptz DEFAULT NULL FILL
--           iid text DEFAULT NULL FILL
-- Returns:  text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.saga_post(qname text, data jsonb, headers jsonb,
                               delayed_until timestamptz DEFAULT NULL, iid text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v text;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, NULL, $3, NULL, $4)', 'post_' || qname)
    INTO v USING data, headers, delayed_until, iid;
    RETURN v;
END;
$$;
