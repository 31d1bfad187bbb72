-- Function: mbus.post_each(qname, data, headers, properties, delayed_until, expires)
--
-- Purpose:  post_each(qname, data[], headers[], properties[], delayed_until, expires): post one by one
--           through post_<qname> (postn_<qname> does so for messages with consume_after).
-- Params:   qname text FILL
--           data jsonb[] FILL
--           headers jsonb[] FILL
--           properties jsonb[] FILL
--           delayed_until timestamptz FILL
--           expires timestamptz FILL
-- Returns:  SETOF text
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.post_each(qname text, data jsonb[], headers jsonb[], properties jsonb[],
                               delayed_until timestamptz, expires timestamptz)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    i     integer;
    v_iid text;
BEGIN
    FOR i IN 1 .. cardinality(data) LOOP
        EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5)', 'post_' || qname) INTO v_iid
        USING data[i], headers[i], properties[i], delayed_until, expires;
        RETURN NEXT v_iid;
    END LOOP;
END;
$$;
