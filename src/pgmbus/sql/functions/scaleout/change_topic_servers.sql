-- Function: mbus.change_topic_servers(topic, servers)
--
-- Purpose:  Begin changing the servers a placed topic is spread over (add some, remove some):
--           the old list goes to previous, the new one to servers, changing_since is set.
--           Publishers following the map send each key to its server in the new list at once;
--           readers following the map hold back the servers that gain keys until
--           mbus.finish_topic_change (pgmbus.scaleout.topics waits for every group on the servers
--           losing keys to read past a fence first). Calling it again with the same list while
--           that change is under way does nothing (a resumed change).
-- Params:   topic    a placed topic (text)
--           servers  the new list (text[]; servers of the map, each once, at least one)
-- Returns:  void; MB001 for a bad name, MB002 for an unplaced topic or an unknown server, MB006
--           for an empty list, a server named twice or the list it has already, MB008 for
--           another change under way or a topic placed with the 'mod' scheme
-- Locks:    the servers' rows (FOR KEY SHARE), the placement row (FOR UPDATE)
-- Calls:    mbus.check_name
-- Tables:   mbus.placement, mbus.placement_server
CREATE OR REPLACE FUNCTION mbus.change_topic_servers(topic text, servers text[])
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    p         mbus.placement;
    v_missing text;
BEGIN
    PERFORM mbus.check_name('topic', topic, 63);
    IF servers IS NULL OR cardinality(servers) < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('topic %L needs a server', topic);
    END IF;
    IF (SELECT count(DISTINCT s) FROM unnest(servers) AS s) <> cardinality(servers) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('topic %L names a server twice: %s', topic, servers);
    END IF;
    -- FOR KEY SHARE: a concurrent mbus.drop_server waits for the change to commit, then sees it
    PERFORM 1 FROM mbus.placement_server AS x WHERE x.name = ANY (servers) ORDER BY x.name
    FOR KEY SHARE;
    SELECT min(s) INTO v_missing FROM unnest(servers) AS s
    WHERE NOT EXISTS (SELECT 1 FROM mbus.placement_server AS x WHERE x.name = s);
    IF v_missing IS NOT NULL OR EXISTS (SELECT 1 FROM unnest(servers) AS s WHERE s IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('server %L does not exist', v_missing);
    END IF;
    SELECT * INTO p FROM mbus.placement AS x WHERE x.kind = 'topic' AND x.name = topic FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('topic %L is not placed', topic);
    END IF;
    IF p.previous IS NOT NULL THEN
        IF p.servers = servers THEN
            RETURN;  -- the same change, resumed
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('topic %L is changing from %s to %s already', topic, p.previous,
                             p.servers);
    END IF;
    IF p.scheme <> 'rendezvous' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('topic %L was placed with the %s scheme, whose keys all move on any '
                             'change; unplace it and place it again when it is empty', topic,
                             p.scheme);
    END IF;
    IF p.servers = servers THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('topic %L is on %s already', topic, servers);
    END IF;
    UPDATE mbus.placement AS x
    SET previous = x.servers, servers = change_topic_servers.servers, changing_since = now()
    WHERE x.kind = 'topic' AND x.name = topic;
END;
$$;
