-- Function: mbus.drop_queue(qname)
--
-- Purpose:  drop_queue(qname): drop the queue, its consumers, triggers from and to it, and its functions.
--           Its dead messages stay in mbus.dmq.
-- Params:   qname text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
    FOR r IN SELECT c.cname FROM mbus.consumer AS c WHERE c.qname = drop_queue.qname LOOP
        FOREACH f IN ARRAY mbus.consumer_functions(qname, r.cname) LOOP
            EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f);
        END LOOP;
    END LOOP;
    FOREACH f IN ARRAY ARRAY['post_', 'postn_', 'peek_', 'clear_queue_', 'take_', 'ack_', 'nack_',
                             'extend_', 'bury_'] LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f || qname);
    END LOOP;
    PERFORM mbus.queue_dropping(qname);
    EXECUTE format('DROP TABLE mbus.%I', 'q_' || qname);
    DELETE FROM mbus.queue AS q WHERE q.qname = drop_queue.qname;
    PERFORM mbus.queue_dropped(qname);
    IF v_srcs IS NOT NULL THEN
        FOREACH f IN ARRAY v_srcs LOOP
            PERFORM mbus.regenerate_queue(f);
        END LOOP;
    END IF;
END;
$$;
