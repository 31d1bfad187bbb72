-- View: mbus.queue_metrics
--
-- Purpose:  mbus.queue_stats() for every queue and consumer, now: qname, cname, depth, ready,
--           delayed, leased, expired, oldest_age, dmq, selector_errors, posted, consumed,
--           paused, dmq_unreported (see queue_stats). For monitoring tools that
--           read views; each read scans the queue tables.
-- Locks:    none (reads only)
-- Calls:    mbus.queue_stats
-- Tables:   mbus.queue_metrics
CREATE OR REPLACE VIEW mbus.queue_metrics AS SELECT * FROM mbus.queue_stats();

COMMENT ON VIEW mbus.queue_metrics IS 'mbus.queue_stats() for every queue and consumer, now.';
