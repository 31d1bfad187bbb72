-- Function: mbus.queue_stats(p_qname, p_now)
--
-- Purpose:  Per queue and consumer: depth, ready, delayed (not due, not leased; messages waiting
--           on dependencies too), leased, expired (counted only there), the age of the oldest
--           ready delivery, dead messages in mbus.dmq (per consumer when the row names it),
--           selector_errors (copies sent to the dmq because the selector raised), posted and
--           consumed (mbus.queue_counters; a rolled-back post still counts), paused, and
--           dmq_unreported (died at max_attempts because their last lease ended without ack,
--           nack or bury, apart from handler failures). Reads the queue tables: cost grows with
--           depth.
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
