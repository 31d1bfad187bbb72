-- View: mbus.queue_totals
--
-- Purpose:  mbus.queue_counters() for every queue (cname NULL) and consumer: qname, cname,
--           posted, consumed (see queue_counters). For monitoring tools that read views; reads
--           sequences only, never the queue tables.
-- Locks:    none (reads only)
-- Calls:    mbus.queue_counters
-- Tables:   mbus.queue_totals
CREATE OR REPLACE VIEW mbus.queue_totals AS SELECT * FROM mbus.queue_counters();

COMMENT ON VIEW mbus.queue_totals IS
    'Posted and consumed totals per queue (cname NULL) and consumer (mbus.queue_counters()).';
