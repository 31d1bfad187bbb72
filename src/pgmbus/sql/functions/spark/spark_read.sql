-- Function: mbus.spark_read(p_from, p_to, p_topics, p_part, p_nparts, p_keys, ...)
--
-- Purpose:  The events consumed at cursor p_to and not at cursor p_from (mbus._between),
--           restricted to part p_part of p_nparts by id (id % p_nparts: a big transaction splits
--           evenly too) and to the filters Spark pushed down (NULL: no condition). A pure
--           function of its arguments while the events are retained: a replayed micro-batch
--           reads the same events (in no particular order). Events sent directly to one
--           subscription are left out unless p_subscription names it: then only those are read.
--           Inlined into the caller's COPY.
-- Params:   p_from     the range's start cursor (text)
--           p_to       the range's end cursor (text)
--           p_topics   only these topics (NULL = all)
--           p_part     this part's number, 0 to p_nparts - 1 (default 0)
--           p_nparts   the number of parts by id % p_nparts (default 1 = no split)
--           p_keys     only events with these keys (NULL = all)
--           p_id_min   only ids >= it (NULL = no bound)
--           p_id_max   only ids <= it (NULL = no bound)
--           p_time_ge  only events published at or after it (NULL = no bound)
--           p_time_gt  only events published after it (NULL = no bound)
--           p_time_le  only events published at or before it (NULL = no bound)
--           p_time_lt  only events published before it (NULL = no bound)
--           p_subscription  read the events sent directly to this subscription (NULL = the
--                      events sent to none)
-- Returns:  TABLE (id, topic, key, payload, headers, published_at): the events, in no
--           particular order; MB006 for a malformed cursor
-- Locks:    none (reads only)
-- Calls:    mbus._between, mbus._cursor_position
-- Tables:   none
-- Design:   docs/DESIGN.md#spark_next_cursor-and-spark_read-ranges-read-by-index
CREATE OR REPLACE FUNCTION mbus.spark_read(
    p_from text, p_to text, p_topics text[] DEFAULT NULL,
    p_part integer DEFAULT 0, p_nparts integer DEFAULT 1,
    p_keys text[] DEFAULT NULL, p_id_min bigint DEFAULT NULL, p_id_max bigint DEFAULT NULL,
    p_time_ge timestamptz DEFAULT NULL, p_time_gt timestamptz DEFAULT NULL,
    p_time_le timestamptz DEFAULT NULL, p_time_lt timestamptz DEFAULT NULL,
    p_subscription bigint DEFAULT NULL)
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT e.id, e.topic, e.key, e.payload, e.headers, e.published_at
    FROM mbus._between(mbus._cursor_position(p_from), mbus._cursor_position(p_to)) AS e
    WHERE (p_topics IS NULL OR e.topic = ANY (p_topics))
      AND ((p_subscription IS NULL AND e.subscription_id IS NULL)
           OR e.subscription_id = p_subscription)
      AND (p_nparts <= 1 OR e.id % p_nparts = p_part)
      AND (p_keys IS NULL OR e.key = ANY (p_keys))
      AND (p_id_min IS NULL OR e.id >= p_id_min)
      AND (p_id_max IS NULL OR e.id <= p_id_max)
      AND (p_time_ge IS NULL OR e.published_at >= p_time_ge)
      AND (p_time_gt IS NULL OR e.published_at > p_time_gt)
      AND (p_time_le IS NULL OR e.published_at <= p_time_le)
      AND (p_time_lt IS NULL OR e.published_at < p_time_lt)
$$;
