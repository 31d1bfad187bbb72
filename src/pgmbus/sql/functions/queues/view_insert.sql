-- Function: mbus.view_insert()
--
-- Purpose:  The INSTEAD OF INSERT trigger of those views (argument: the queue name).
-- Params:   none
-- Returns:  trigger
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.view_insert()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM mbus.require_queue(TG_ARGV[0]);
    EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5, $6)', 'post_' || TG_ARGV[0])
    INTO NEW.iid
    USING NEW.data, NEW.headers, NEW.properties, NEW.delayed_until, NEW.expires, NEW.iid;
    RETURN NEW;
END;
$$;
