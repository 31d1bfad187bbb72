-- Function: mbus.queue_stats(p_qname, p_now)
--
-- Purpose:  Per queue and consumer: depth (deliveries waiting), ready (can be claimed now), delayed
--           (not yet due and not leased; messages waiting on dependencies count here), leased
--           (under a live lease), expired (until rotate_queue or clear_queue deletes them; an
--           expired delivery counts only here, not as delayed), the age of the oldest ready
--           delivery, dead messages of the queue in mbus.dmq (per consumer when the dmq row
--           names it) and selector_errors (messages whose copy went to the dmq because the
--           consumer's selector raised); posted and consumed, the consumer's totals
--           (mbus.queue_counters: deliveries made for it and deliveries it consumed, counted
--           by sequences, so a rolled-back post still counts); paused (mbus.pause_queue: the
--           consumer or its queue); dmq_unreported, those of the dead messages that died at
--           max_attempts because their last delivery never reported (its lease ended without
--           ack, nack or bury: an ack lost while the database was down, a worker killed), apart
--           from handler failures. Reads the queue tables: cost grows with depth.
-- Params:   p_qname  one queue (text; NULL = every queue)
--           p_now    the clock (NULL = clock_timestamp()); tests move it
-- Returns:  TABLE (qname, cname, depth, ready, delayed, leased, expired bigint, oldest_age
--           interval, dmq, selector_errors, posted, consumed bigint, paused boolean,
--           dmq_unreported bigint), one row per consumer; no row for an unknown queue
-- Locks:    none (reads only)
-- Calls:    mbus.generated_name, mbus.given_clock, mbus.queue_counters
-- Tables:   mbus.consumer, mbus.dmq, mbus.queue, mbus.queue_pause
CREATE OR REPLACE FUNCTION mbus.queue_stats(p_qname text DEFAULT NULL, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (qname text, cname text, depth bigint, ready bigint, delayed bigint, leased bigint,
               expired bigint, oldest_age interval, dmq bigint, selector_errors bigint,
               posted bigint, consumed bigint, paused boolean, dmq_unreported bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    r     record;
BEGIN
    FOR r IN SELECT q.qname AS q FROM mbus.queue AS q
             WHERE p_qname IS NULL OR q.qname = p_qname ORDER BY q.qname LOOP
        RETURN QUERY EXECUTE format($t$
            SELECT $1, c.cname,
                   count(d.c),
                   count(d.c) FILTER (WHERE d.vt <= $2 AND (d.expires IS NULL OR d.expires > $2)),
                   count(d.c) FILTER (WHERE d.vt > $2 AND d.lease_token IS NULL
                                        AND (d.expires IS NULL OR d.expires > $2)),
                   count(d.c) FILTER (WHERE d.vt > $2 AND d.lease_token IS NOT NULL),
                   count(d.c) FILTER (WHERE d.expires <= $2),
                   $2 - min(d.vt) FILTER (WHERE d.vt <= $2 AND (d.expires IS NULL OR d.expires > $2)),
                   (SELECT count(*) FROM mbus.dmq AS x WHERE x.qname = $1 AND x.cname = c.cname),
                   c.selector_errors, t.posted, t.consumed,
                   EXISTS (SELECT 1 FROM mbus.queue_pause AS p
                           WHERE p.qname = $1 AND p.cname IN ('', c.cname)),
                   (SELECT count(*) FROM mbus.dmq AS x
                    WHERE x.qname = $1 AND x.cname = c.cname AND x.unreported)
            FROM mbus.consumer AS c LEFT JOIN mbus.%I AS d ON d.c = c.cid
            JOIN mbus.queue_counters($1) AS t ON t.cname = c.cname
            WHERE c.qname = $1
            GROUP BY c.cid, c.cname, c.selector_errors, t.posted, t.consumed
            ORDER BY c.cname$t$, mbus.generated_name('relation', 'table', r.q))
        USING r.q, v_now;
    END LOOP;
END;
$$;
