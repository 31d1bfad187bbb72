-- Function: mbus.view_insert()
--
-- Purpose:  The INSTEAD OF INSERT trigger function of the views mbus.create_view makes (TG_ARGV[0]:
--           the queue name): posts the inserted row's data, headers, properties, delayed_until,
--           expires and iid through post_<qname> and returns the row with the new iid (INSERT ...
--           RETURNING iid works). SECURITY DEFINER: the inserting role needs only its grant on the
--           view.
-- Params:   none (a trigger; TG_ARGV[0] is the queue name)
-- Returns:  trigger: NEW with iid set
-- Locks:    those of post_<qname>
-- Calls:    mbus.generated_name, mbus.require_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.view_insert()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM mbus.require_queue(TG_ARGV[0]);
    EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5, $6)',
                   mbus.generated_name('function', 'post', TG_ARGV[0]))
    INTO NEW.iid
    USING NEW.data, NEW.headers, NEW.properties, NEW.delayed_until, NEW.expires, NEW.iid;
    RETURN NEW;
END;
$$;
