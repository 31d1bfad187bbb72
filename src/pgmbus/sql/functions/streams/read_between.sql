-- Function: mbus.read_between(from_cursor, to_cursor, topics, slot, nslots)
--
-- Purpose:  The events consumed at to_cursor and not at from_cursor, optionally only these topics
--           and this key-hash slot of nslots, in id order. A pure function of its arguments while
--           the events are retained: replays, audits and batch jobs read a range between two
--           cursors (current_cursor, group_cursor, read_next's) without any group. The range is
--           mbus._between's index range scans on (txid, id) (also inside a transaction, from a
--           cursor's position on); enable_seqscan is off for the reason given at the SET. A slot
--           prefix of the cursors is ignored. Events sent directly to one subscription are
--           left out (only that subscription's group reads them).
-- Params:   from_cursor  the earlier cursor (text)
--           to_cursor    the later cursor (text)
--           topics       only these topics (text[]; NULL = all)
--           slot         only this slot of nslots (integer; NULL = all, with nslots NULL)
--           nslots       the slot count slot refers to (integer; NULL with slot NULL)
-- Returns:  TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb, published_at
--           timestamptz), in id order; MB006 for a malformed cursor or a bad slot/nslots pair,
--           MB009 when the log is not this cluster's
-- Locks:    none (reads only)
-- Calls:    mbus._between, mbus._check_log, mbus._parse_position, mbus.key_slot
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.read_between(from_cursor text, to_cursor text, topics text[] DEFAULT NULL,
                                  slot integer DEFAULT NULL, nslots integer DEFAULT NULL)
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
-- an index scan of the (txid, id) ranges whatever the (always stale at the head) statistics say
SET enable_seqscan = off
SET jit = off  -- see read_next: disabled scans inflate the estimate past jit_above_cost
AS $$
#variable_conflict use_column
DECLARE
    v_from mbus.stream_position;
    v_to   mbus.stream_position;
BEGIN
    PERFORM mbus._check_log();
    IF (slot IS NULL) <> (nslots IS NULL) OR nslots < 1 OR slot < 0 OR slot >= nslots THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('slot %s of nslots %s is not a valid slot', slot, nslots);
    END IF;
    v_from := (mbus._parse_position(from_cursor)).pos;
    v_to := (mbus._parse_position(to_cursor)).pos;
    RETURN QUERY
    SELECT e.id, e.topic, e.key, e.payload, e.headers, e.published_at
    FROM mbus._between(v_from, v_to) AS e
    WHERE (topics IS NULL OR e.topic = ANY (topics))
      AND e.subscription_id IS NULL  -- directed events: only their subscription's group
      AND (nslots IS NULL OR mbus.key_slot(e.key, e.id, nslots) = slot)
    ORDER BY e.id;
END;
$$;
