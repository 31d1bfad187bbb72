-- Function: mbus.drop_queue(qname)
--
-- Purpose:  Drop a queue: its consumers, the triggers from and to it, its views, its generated
--           functions, its table and roles. Releases made pending by consumes earlier in the
--           transaction run first (PostgreSQL does not drop a table with pending trigger events,
--           and they run through the queue's generated deps_<q>);
--           messages of other queues waiting on its messages are released (mbus.queue_dropped). Its
--           dead messages stay in mbus.dmq. Queues with a trigger into it get their functions
--           regenerated.
-- Params:   qname  the queue's name (text)
-- Returns:  void; MB001/MB002 for a bad or unknown queue; MB008 when it releases dependants outside
--           READ COMMITTED
-- Locks:    pg_advisory_xact_lock(1835165041) (serializes every catalog change of queues:
--           create/drop of queues, consumers, triggers, clear_tempq); DROP TABLE mbus.q_<qname>:
--           ACCESS EXCLUSIVE on the table and its segments, waiting for every open transaction that
--           touched them and blocking their posts and claims meanwhile; DROP VIEW, DROP FUNCTION,
--           DROP ROLE; mbus.release_deps's locks for released dependants
-- Calls:    mbus.consumer_functions, mbus.generated_name, mbus.generated_names, mbus.queue_dropped,
--           mbus.queue_dropping, mbus.regenerate_queue, mbus.require_queue
-- Tables:   mbus.client_iids, mbus.consumer, mbus.queue, mbus.queue_trigger
CREATE OR REPLACE FUNCTION mbus.drop_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r      record;
    f      text;
    v_srcs text[];
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_queue(qname);
    SELECT array_agg(tr.src) INTO v_srcs FROM mbus.queue_trigger AS tr WHERE tr.dst = qname;
    DELETE FROM mbus.queue_trigger AS tr WHERE tr.dst = qname OR tr.src = qname;
    DELETE FROM mbus.client_iids AS ci WHERE ci.qname = drop_queue.qname;
    -- First: the releases pending from consumes earlier in this transaction run through the
    -- queue's generated deps_<q>, so they run before its functions go.
    PERFORM mbus.queue_dropping(qname);
    FOR r IN SELECT c.cname FROM mbus.consumer AS c WHERE c.qname = drop_queue.qname LOOP
        FOREACH f IN ARRAY mbus.consumer_functions(qname, r.cname) LOOP
            EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f);
        END LOOP;
    END LOOP;
    FOR f IN SELECT g.name FROM mbus.generated_names(qname) AS g WHERE g.kind = 'function' LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f);
    END LOOP;
    EXECUTE format('DROP TABLE mbus.%I', mbus.generated_name('relation', 'table', qname));
    DELETE FROM mbus.queue AS q WHERE q.qname = drop_queue.qname;
    PERFORM mbus.queue_dropped(qname);
    IF v_srcs IS NOT NULL THEN
        FOREACH f IN ARRAY v_srcs LOOP
            PERFORM mbus.regenerate_queue(f);
        END LOOP;
    END IF;
END;
$$;
