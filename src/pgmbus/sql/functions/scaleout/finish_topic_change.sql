-- Function: mbus.finish_topic_change(topic)
--
-- Purpose:  End a change of a topic's servers begun by mbus.change_topic_servers: readers
--           following the map read the new list from now on. pgmbus.scaleout.topics calls it only
--           once every group on the servers losing keys has read past the change's fence.
-- Params:   topic  a topic whose servers are changing (text)
-- Returns:  void; MB001 for a bad name, MB002 for an unplaced topic, MB008 when no change is
--           under way
-- Locks:    the placement row (UPDATE)
-- Calls:    mbus.check_name
-- Tables:   mbus.placement
CREATE OR REPLACE FUNCTION mbus.finish_topic_change(topic text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('topic', topic, 63);
    IF NOT EXISTS (SELECT 1 FROM mbus.placement AS x WHERE x.kind = 'topic' AND x.name = topic) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('topic %L is not placed', topic);
    END IF;
    UPDATE mbus.placement AS x SET previous = NULL, changing_since = NULL
    WHERE x.kind = 'topic' AND x.name = topic AND x.previous IS NOT NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('no change of topic %L is under way', topic);
    END IF;
END;
$$;
