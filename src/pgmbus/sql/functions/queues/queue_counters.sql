-- Function: mbus.queue_counters(p_qname)
--
-- Purpose:  The posted and consumed totals of queues and consumers, read from their counter
--           sequences (mbus.queue_counter_sequences explains them: not transactional, a
--           rolled-back post still counts, like a Prometheus counter). Cheap: one sequence read
--           per counter, no scan of the queue tables. Per consumer: posted = deliveries made for
--           it, consumed = deliveries it consumed (consume, consumen, ack of a lease; not take,
--           purge, expiry or bury). Per queue (cname NULL): posted = messages posted, consumed =
--           the sum over its consumers.
-- Params:   p_qname  one queue (text; NULL = every queue)
-- Returns:  TABLE (qname text, cname text, posted bigint, consumed bigint): a row per queue
--           (cname NULL) and per consumer; no row for an unknown queue
-- Locks:    none (reads only)
-- Calls:    mbus.generated_name
-- Tables:   mbus.consumer, mbus.queue
CREATE OR REPLACE FUNCTION mbus.queue_counters(p_qname text DEFAULT NULL)
RETURNS TABLE (qname text, cname text, posted bigint, consumed bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    WITH c AS (
        SELECT c.qname, c.cname,
               coalesce(pg_sequence_last_value(
                   to_regclass(format('mbus.%I', mbus.generated_name(
                       'relation', 'posted_c' || c.cid, c.qname)))),
                   0) AS posted,
               coalesce(pg_sequence_last_value(
                   to_regclass(format('mbus.%I', mbus.generated_name(
                       'relation', 'consumed_c' || c.cid, c.qname)))),
                   0) AS consumed
        FROM mbus.consumer AS c
        WHERE p_qname IS NULL OR c.qname = p_qname)
    SELECT q.qname, NULL::text,
           coalesce(pg_sequence_last_value(
               to_regclass(format('mbus.%I',
                                  mbus.generated_name('relation', 'counter', q.qname)))), 0),
           coalesce((SELECT sum(c.consumed) FROM c WHERE c.qname = q.qname), 0)::bigint
    FROM mbus.queue AS q
    WHERE p_qname IS NULL OR q.qname = p_qname
    UNION ALL
    SELECT c.qname, c.cname, c.posted, c.consumed FROM c
    ORDER BY 1, 2 NULLS FIRST;
$$;
