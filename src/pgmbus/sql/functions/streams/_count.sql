-- Function: mbus._count(p_name, p_by)
--
-- Purpose:  Add to one counter of noteworthy events in mbus.stream_counters (created at the first
--           count). The counters are exported as metrics by the Python side (`pgmbus streams
--           metrics`). Counted today: 'dead_letters' (retry_event), 'groups_expired'
--           (maintain) and 'subscription_errors' (read_subscriptions: a condition that failed
--           on some event of a batch).
-- Params:   p_name  the counter's name, e.g. 'dead_letters'
--           p_by    how much to add (bigint, 1 unless given)
-- Returns:  void
-- Locks:    the counter's row in mbus.stream_counters (INSERT ... ON CONFLICT DO UPDATE), held to
--           commit: concurrent counts of the same name wait for each other
-- Calls:    none
-- Tables:   mbus.stream_counters
CREATE OR REPLACE FUNCTION mbus._count(p_name text, p_by bigint DEFAULT 1)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    INSERT INTO mbus.stream_counters AS c (name, value) VALUES (p_name, p_by)
    ON CONFLICT (name) DO UPDATE SET value = c.value + excluded.value;
$$;
