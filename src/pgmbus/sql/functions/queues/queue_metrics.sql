-- View: mbus.queue_metrics
--
-- Purpose:  FILL
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE VIEW mbus.queue_metrics AS SELECT * FROM mbus.queue_stats();

COMMENT ON VIEW mbus.queue_metrics IS 'mbus.queue_stats() for every queue and consumer, now.';
