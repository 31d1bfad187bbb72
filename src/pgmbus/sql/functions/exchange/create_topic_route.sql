-- Function: mbus.create_topic_route(name, link, src_topic, dst_topic, key_lo, key_hi)
--
-- Purpose:  Forward the events of topic src_topic (only keys in [key_lo, key_hi) when a bound
--           is given; an event without key is then not forwarded) to topic dst_topic of the
--           link's database, exactly once, in the order the log gives them (so per key), by
--           `pgmbus bridge`. Creates the stream group 'xt_<name>' positioned 'now' and limited
--           to src_topic: events published from now on wait in the log until the mover has
--           committed them on the other side (mbus.exchange_take_topic /
--           mbus.exchange_receive_topic).
-- Params:   name       the route's name (the name rule, at most 45 bytes; unique among queue and
--                      topic routes)
--           link       the link to use (text, mbus.create_link)
--           src_topic  a topic of this database (text, 1 to 200 bytes)
--           dst_topic  a topic of the link's database (text, 1 to 200 bytes)
--           key_lo     the smallest key forwarded (text, NULL = no lower bound)
--           key_hi     the first key not forwarded (text, NULL = no upper bound)
-- Returns:  void; MB001 for a bad name, MB002 for an unknown link, MB003 when a route (or a group
--           named xt_<name>) exists, MB006 for a bad topic or key_lo >= key_hi
-- Locks:    those of mbus.create_group; a row insert into mbus.exchange_topic_route
-- Calls:    mbus.check_name, mbus.configure_group, mbus.create_group
-- Tables:   mbus.exchange_link, mbus.exchange_route, mbus.exchange_topic_route
CREATE OR REPLACE FUNCTION mbus.create_topic_route(name text, link text, src_topic text,
                                                   dst_topic text, key_lo text DEFAULT NULL,
                                                   key_hi text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('route', name, 45);
    PERFORM mbus.check_name('link', link, 32);
    IF src_topic IS NULL OR src_topic = '' OR octet_length(src_topic) > 200
       OR dst_topic IS NULL OR dst_topic = '' OR octet_length(dst_topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid topic %L or %L (1 to 200 bytes)', src_topic, dst_topic);
    END IF;
    IF key_lo IS NOT NULL AND key_hi IS NOT NULL AND key_lo >= key_hi THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('key_lo %L must sort before key_hi %L', key_lo, key_hi);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM mbus.exchange_link AS l WHERE l.name = create_topic_route.link) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('link %L does not exist', link);
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.exchange_topic_route AS r WHERE r.name = create_topic_route.name)
       OR EXISTS (SELECT 1 FROM mbus.exchange_route AS r WHERE r.name = create_topic_route.name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003', MESSAGE = format('route %L exists already', name);
    END IF;
    PERFORM mbus.create_group('xt_' || name, 'now');
    PERFORM mbus.configure_group('xt_' || name, topics => ARRAY[src_topic]);
    INSERT INTO mbus.exchange_topic_route (name, link, src_topic, dst_topic, key_lo, key_hi, grp)
    VALUES (name, link, src_topic, dst_topic, key_lo, key_hi, 'xt_' || name);
END;
$$;
