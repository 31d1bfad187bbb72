-- Function: mbus.purge_queue(qname, cname, p_now)
--
-- Purpose:  Delete the pending messages of a queue (cname NULL: of every consumer) or of one
--           consumer: every delivery that is not under a live lease (ready, delayed, expired,
--           waiting for consume_after) and not locked by a transaction that is consuming it
--           (those are skipped, never waited for: they are being consumed). Like a consume,
--           a purged delivery that others wait on releases them (consume_after). Purged messages
--           are not counted as consumed and do not go to the dmq. Leases held go on: their ack,
--           nack, extend and bury work as before.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text; NULL = every consumer of the queue)
--           p_now  the clock (NULL = clock_timestamp()); tests move it
-- Returns:  bigint: deliveries deleted; MB001/MB002 for a bad or unknown queue or consumer
-- Locks:    row locks of the deliveries it deletes (FOR UPDATE SKIP LOCKED)
-- Calls:    mbus.generated_name, mbus.given_clock, mbus.require_consumer, mbus.require_queue
-- Tables:   mbus.consumer
CREATE OR REPLACE FUNCTION mbus.purge_queue(qname text, cname text DEFAULT NULL,
                                            p_now timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cid integer;
    v_n   bigint;
BEGIN
    IF cname IS NULL THEN
        PERFORM mbus.require_queue(qname);
    ELSE
        PERFORM mbus.require_consumer(qname, cname);
        SELECT c.cid INTO v_cid FROM mbus.consumer AS c
        WHERE c.qname = purge_queue.qname AND c.cname = purge_queue.cname;
    END IF;
    EXECUTE format($t$
        WITH s AS MATERIALIZED (
            SELECT q.tableoid AS rel, q.ctid AS tid FROM mbus.%1$I AS q
            WHERE ($1::integer IS NULL OR q.c = $1)
              AND NOT (q.lease_token IS NOT NULL AND q.vt > $2)
            FOR UPDATE SKIP LOCKED)
        DELETE FROM mbus.%1$I AS q USING s
        WHERE q.tableoid = s.rel AND q.ctid = s.tid$t$,
            mbus.generated_name('relation', 'table', qname))
    USING v_cid, coalesce(mbus.given_clock(p_now), clock_timestamp());
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;
