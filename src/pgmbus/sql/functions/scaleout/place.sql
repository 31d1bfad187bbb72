-- Function: mbus.place(kind, name, servers)
--
-- Purpose:  Put a queue (one server) or a topic (one or several servers: a message with key k
--           goes to servers[1 + crc32(k) % n], pgmbus.scaleout.Cluster) in the placement map.
--           A name is placed once: changing where it lives is a move (mbus.begin_move), never
--           a second placement, so no message is left behind on a server nobody reads.
-- Params:   kind     'queue' or 'topic'
--           name     the queue's or topic's name (the name rule)
--           servers  servers of mbus.placement_server (text[]; exactly one for a queue, no
--                    server twice)
-- Returns:  void; MB001 for a bad name, MB002 for an unknown server, MB003 when the name is
--           placed already (the message names its servers), MB006 for a bad kind or server list
-- Locks:    FOR KEY SHARE on the servers' rows of mbus.placement_server (mbus.drop_server
--           waits for the placement); pg_advisory_xact_lock on (kind, name); a row insert
--           into mbus.placement
-- Calls:    mbus.check_name
-- Tables:   mbus.placement, mbus.placement_server
CREATE OR REPLACE FUNCTION mbus.place(kind text, name text, servers text[])
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_missing text;
    v_where   text[];
BEGIN
    IF kind IS NULL OR kind NOT IN ('queue', 'topic') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('kind must be queue or topic, not %L', kind);
    END IF;
    PERFORM mbus.check_name(kind, name, 63);
    IF servers IS NULL OR cardinality(servers) < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('%s %L needs a server', kind, name);
    END IF;
    IF kind = 'queue' AND cardinality(servers) <> 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('queue %L lives on one server, not %s', name, cardinality(servers));
    END IF;
    IF (SELECT count(DISTINCT s) FROM unnest(servers) AS s) <> cardinality(servers) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('%s %L names a server twice: %s', kind, name, servers);
    END IF;
    -- A share lock on each server's row: mbus.drop_server (FOR UPDATE) waits for this
    -- placement to commit and then sees it; a drop under way makes this wait, then the server
    -- is missing below. Without it the two pass each other and the queue names no server.
    PERFORM 1 FROM mbus.placement_server AS x WHERE x.name = ANY (servers) ORDER BY x.name
    FOR KEY SHARE;
    SELECT min(s) INTO v_missing FROM unnest(servers) AS s
    WHERE s IS NULL OR NOT EXISTS (SELECT 1 FROM mbus.placement_server AS x WHERE x.name = s);
    IF v_missing IS NOT NULL OR EXISTS (SELECT 1 FROM unnest(servers) AS s WHERE s IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('server %L does not exist', v_missing);
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('mbus.placement'), hashtext(kind || ':' || name));
    SELECT p.servers INTO v_where FROM mbus.placement AS p
    WHERE p.kind = place.kind AND p.name = place.name;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = format('%s %L is placed already on %s', kind, name, v_where),
            HINT = 'move it (pgmbus placement move) instead of placing it twice';
    END IF;
    INSERT INTO mbus.placement (kind, name, servers) VALUES (kind, name, servers);
END;
$$;
