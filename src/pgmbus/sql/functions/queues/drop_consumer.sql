-- Function: mbus.drop_consumer(qname, cname)
--
-- Purpose:  Drop a consumer: its row, its pending deliveries, its generated functions and its role;
--           the queue's functions are regenerated without it. Messages it did not consume are lost
--           for it (other consumers keep theirs); its pause goes too.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text)
-- Returns:  void; MB001/MB002 for a bad or unknown queue or consumer; MB008 for the last
--           consumer of a queue that a trigger or a stream route feeds (not a temporary one)
-- Locks:    pg_advisory_xact_lock(1835165041) (serializes every catalog change of queues:
--           create/drop of queues, consumers, triggers, clear_tempq); row locks of the consumer's
--           deliveries (DELETE), waiting for claims in progress; DROP FUNCTION of its four
--           functions; DROP OWNED / DROP ROLE of its role
-- Calls:    mbus.consumer_functions, mbus.consumer_role, mbus.generated_name,
--           mbus.regenerate_queue, mbus.require_consumer
-- Tables:   mbus.consumer, mbus.queue_pause, mbus.queue_trigger, mbus.subscription_queues,
--           mbus.subscriptions, mbus.temp_object
CREATE OR REPLACE FUNCTION mbus.drop_consumer(qname text, cname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cid   integer;
    v_feeds text;
    f       text;
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_consumer(qname, cname);
    DELETE FROM mbus.consumer AS c
    WHERE c.qname = drop_consumer.qname AND c.cname = drop_consumer.cname
    RETURNING c.cid INTO v_cid;
    -- The last consumer of a queue that triggers or stream routes feed: posts there would be
    -- refused (MB008), failing the posts of the trigger's source queue and the routing of the
    -- whole group, other users' work. A temporary consumer's session end (clear_tempq) is
    -- not refused: it cannot be.
    IF NOT EXISTS (SELECT 1 FROM mbus.consumer AS c WHERE c.qname = drop_consumer.qname)
       AND NOT EXISTS (SELECT 1 FROM mbus.temp_object AS t
                       WHERE t.kind = 'consumer' AND t.qname = drop_consumer.qname
                         AND t.cname = drop_consumer.cname) THEN
        v_feeds := (SELECT string_agg(x.what, ', ' ORDER BY x.what)
                    FROM (SELECT format('the trigger from queue %s', tr.src) AS what
                          FROM mbus.queue_trigger AS tr WHERE tr.dst = drop_consumer.qname
                          UNION ALL
                          SELECT format('a route of stream group %s', s.group_name)
                          FROM mbus.subscription_queues AS sq
                          JOIN mbus.subscriptions AS s ON s.id = sq.subscription_id
                          WHERE sq.qname = drop_consumer.qname) AS x);
        IF v_feeds IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'MB008',
                MESSAGE = format('consumer %s is the last of queue %s, which %s feed: posts '
                                 'there would fail; drop those first', cname, qname, v_feeds);
        END IF;
    END IF;
    DELETE FROM mbus.queue_pause AS p  -- a consumer made again later must not start paused
    WHERE p.qname = drop_consumer.qname AND p.cname = drop_consumer.cname;
    EXECUTE format('DELETE FROM mbus.%I WHERE c = $1',
                   mbus.generated_name('relation', 'table', qname)) USING v_cid;
    FOREACH f IN ARRAY mbus.consumer_functions(qname, cname) LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f);
    END LOOP;
    PERFORM mbus.consumer_role(qname, cname, false);
    PERFORM mbus.regenerate_queue(qname);
END;
$$;
