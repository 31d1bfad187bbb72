-- Function: mbus.create_route(name, link, src_queue, dst_queue, selector)
--
-- Purpose:  Forward the messages of queue src_queue for which selector holds to queue dst_queue
--           of the link's database. Creates the route's durable consumer 'xr_<name>' on
--           src_queue (mbus.create_consumer: the same selector rules as any consumer), so every
--           message posted from now on waits in src_queue until `pgmbus bridge` has committed it
--           on the other side (mbus.exchange_take / mbus.exchange_receive). The destination
--           queue is not checked here (the other database may be down): the mover reports MB002
--           and retries while it is missing.
-- Params:   name       the route's name (the name rule, at most 21 bytes: 'xr_' + name is a
--                      consumer name)
--           link       the link to use (text, mbus.create_link)
--           src_queue  a queue of this database (text)
--           dst_queue  a queue of the link's database (text, the queue name rule)
--           selector   a static boolean expression over t (mbus.check_selector; NULL = all)
-- Returns:  void; MB001 for a bad name, MB002 for an unknown link or queue, MB003 when the route
--           (or a consumer named xr_<name>) exists, MB004 for a bad selector
-- Locks:    those of mbus.create_consumer (pg_advisory_xact_lock(1835165041), the regeneration
--           of src_queue's functions); a row insert into mbus.exchange_route
-- Calls:    mbus.check_name, mbus.create_consumer
-- Tables:   mbus.exchange_link, mbus.exchange_route
CREATE OR REPLACE FUNCTION mbus.create_route(name text, link text, src_queue text, dst_queue text,
                                             selector text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('route', name, 21);
    PERFORM mbus.check_name('link', link, 32);
    PERFORM mbus.check_name('queue', dst_queue, 24);
    IF NOT EXISTS (SELECT 1 FROM mbus.exchange_link AS l WHERE l.name = create_route.link) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('link %L does not exist', link);
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.exchange_route AS r WHERE r.name = create_route.name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003', MESSAGE = format('route %L exists already', name);
    END IF;
    PERFORM mbus.create_consumer(src_queue, 'xr_' || name, selector);
    INSERT INTO mbus.exchange_route (name, link, src_queue, dst_queue, selector, cname)
    VALUES (name, link, src_queue, dst_queue, selector, 'xr_' || name);
END;
$$;
