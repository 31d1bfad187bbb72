-- Function: mbus.spark_read(p_from, p_to, p_topics, p_part, p_nparts, p_keys, p_id_min, p_id_max, p_time_ge, p_time_gt, p_time_le, p_time_lt)
--
-- Purpose:  spark_read: as in the first spark migration, plus the fast path described above. The first
--           condition (the txid range, an index condition for micro-batches) is unchanged; the fast
--           path is a subset of it, so the plans stay the same.
-- Params:   p_from text FILL
--           p_to text FILL
--           p_topics text[] DEFAULT NULL FILL
--           p_part integer DEFAULT 0 FILL
--           p_nparts integer DEFAULT 1 FILL
--           p_keys text[] DEFAULT NULL FILL
--           p_id_min bigint DEFAULT NULL FILL
--           p_id_max bigint DEFAULT NULL FILL
--           p_time_ge timestamptz DEFAULT NULL FILL
--           p_time_gt timestamptz DEFAULT NULL FILL
--           p_time_le timestamptz DEFAULT NULL FILL
--           p_time_lt timestamptz DEFAULT NULL FILL
-- Returns:  TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb, published_at timestamptz)
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.spark_read(
    p_from text, p_to text, p_topics text[] DEFAULT NULL,
    p_part integer DEFAULT 0, p_nparts integer DEFAULT 1,
    p_keys text[] DEFAULT NULL, p_id_min bigint DEFAULT NULL, p_id_max bigint DEFAULT NULL,
    p_time_ge timestamptz DEFAULT NULL, p_time_gt timestamptz DEFAULT NULL,
    p_time_le timestamptz DEFAULT NULL, p_time_lt timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT e.id, e.topic, e.key, e.payload, e.headers, e.published_at
    FROM mbus.events AS e
    WHERE (e.txid = ANY (mbus._spark_xip(p_from))
           OR (e.txid >= pg_catalog.pg_snapshot_xmax(mbus._spark_lo(p_from))
               AND e.txid < mbus._spark_top(p_to)))
      AND ((e.txid >= mbus._spark_top(p_from) AND e.txid < mbus._spark_bottom(p_to))
           OR ((pg_catalog.pg_visible_in_snapshot(e.txid, mbus._spark_lo(p_to))
                OR (mbus._spark_hi(p_to) IS NOT NULL
                    AND pg_catalog.pg_visible_in_snapshot(e.txid, mbus._spark_hi(p_to))
                    AND (e.txid, e.id)
                        <= (mbus._spark_after_txid(p_to), mbus._spark_after_id(p_to))))
               AND NOT (pg_catalog.pg_visible_in_snapshot(e.txid, mbus._spark_lo(p_from))
                        OR (mbus._spark_hi(p_from) IS NOT NULL
                            AND pg_catalog.pg_visible_in_snapshot(e.txid, mbus._spark_hi(p_from))
                            AND (e.txid, e.id)
                                <= (mbus._spark_after_txid(p_from),
                                    mbus._spark_after_id(p_from))))))
      AND (p_topics IS NULL OR e.topic = ANY (p_topics))
      AND (p_nparts <= 1 OR e.id % p_nparts = p_part)
      AND (p_keys IS NULL OR e.key = ANY (p_keys))
      AND (p_id_min IS NULL OR e.id >= p_id_min)
      AND (p_id_max IS NULL OR e.id <= p_id_max)
      AND (p_time_ge IS NULL OR e.published_at >= p_time_ge)
      AND (p_time_gt IS NULL OR e.published_at > p_time_gt)
      AND (p_time_le IS NULL OR e.published_at <= p_time_le)
      AND (p_time_lt IS NULL OR e.published_at < p_time_lt)
$$;
