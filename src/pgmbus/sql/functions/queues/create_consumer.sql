-- Function: mbus.create_consumer(qname, cname, selector, noindex)
--
-- Purpose:  Create a durable consumer: it receives every message posted to qname after it was
--           created for which selector holds (NULL: all); each post inserts one delivery row per
--           such consumer. Consumer names are unique in the database, except 'default', which every
--           queue has. noindex is the original API's flag for large queues; this storage needs no
--           per-consumer index (each consumer's rows are its own in the claim index (c, vt, id)),
--           so nothing is built either way and noindex only says so in a NOTICE. Makes the
--           consumer's role and regenerates the queue's functions.
-- Params:   qname     the queue's name (text)
--           cname     the consumer's name (text; the name rule, at most 24 bytes)
--           selector  a static boolean expression over t (mbus.check_selector; NULL = all)
--           noindex   the original API's flag (boolean); only a NOTICE
-- Returns:  void; MB001/MB002 for bad names, MB003 when the name or a name it would make is taken
--           (mbus.name_clash: another queue's or consumer's, the mbus schema's), MB004 bad
--           selector
-- Locks:    pg_advisory_xact_lock(1835165041) (serializes every catalog change of queues:
--           create/drop of queues, consumers, triggers, clear_tempq); the CREATE OR REPLACE of the
--           queue's generated functions; ensure_role's CREATE ROLE
-- Calls:    mbus.check_name, mbus.check_selector, mbus.consumer_role, mbus.generated_name,
--           mbus.name_clash, mbus.regenerate_queue, mbus.require_queue
-- Tables:   mbus.consumer
CREATE OR REPLACE FUNCTION mbus.create_consumer(qname text, cname text, selector text DEFAULT NULL,
                                     noindex boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_clash text;
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_queue(qname);
    PERFORM mbus.check_name('consumer', cname, 24);
    IF EXISTS (SELECT 1 FROM mbus.consumer AS c
               WHERE c.cname = create_consumer.cname
                 AND (c.cname <> 'default' OR c.qname = create_consumer.qname)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = format('consumer %L exists already (consumer names are unique)', cname);
    END IF;
    v_clash := mbus.name_clash(qname, cname);
    IF v_clash IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003', MESSAGE = v_clash;
    END IF;
    PERFORM mbus.check_selector(selector);
    INSERT INTO mbus.consumer (qname, cname, selector, noindex)
    VALUES (qname, cname, selector, coalesce(noindex, false));
    PERFORM mbus.consumer_role(qname, cname, true);
    PERFORM mbus.regenerate_queue(qname);
    IF noindex THEN
        RAISE NOTICE USING MESSAGE = format(
            'consumer %s: no index needed; its deliveries are served by %s (c, vt, id)',
            cname, quote_ident(mbus.generated_name('relation', 'claim', qname)));
    END IF;
END;
$$;
