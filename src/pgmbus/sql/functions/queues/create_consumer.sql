-- Function: mbus.create_consumer(qname, cname, selector, noindex)
--
-- Purpose:  create_consumer(qname, cname, selector, noindex): a durable consumer that receives every
--           message posted to qname after it was created for which selector holds (NULL: all).
--           noindex is the seed's flag for large queues; this storage needs no per-consumer index (each
--           consumer's rows are its own), so nothing is built either way and noindex only says so.
-- Params:   qname text FILL
--           cname text FILL
--           selector text DEFAULT NULL FILL
--           noindex boolean DEFAULT false FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.create_consumer(qname text, cname text, selector text DEFAULT NULL,
                                     noindex boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
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
    PERFORM mbus.check_selector(selector);
    INSERT INTO mbus.consumer (qname, cname, selector, noindex)
    VALUES (qname, cname, selector, coalesce(noindex, false));
    PERFORM mbus.consumer_role(qname, cname, true);
    PERFORM mbus.regenerate_queue(qname);
    IF noindex THEN
        RAISE NOTICE USING MESSAGE = format(
            'consumer %s: no index needed; its deliveries are served by %s (c, vt, id)',
            cname, quote_ident('q_' || qname || '_claim'));
    END IF;
END;
$$;
