-- Function: mbus.create_trigger(src_queue_name, dst_queue_name, selector)
--
-- Purpose:  Copy every message posted to src into dst when selector holds: post_<src> calls
--           post_<dst> (postn_<src> does it in its statement). The copy gets a new iid of dst and
--           keeps source_db, enqueue_time and seenby. A trigger into itself or one that closes a
--           cycle (src reachable from dst through triggers) is refused: a message would be copied
--           forever.
-- Params:   src_queue_name  the queue copied from (text)
--           dst_queue_name  the queue copied to (text)
--           selector        a static boolean expression over t (NULL = every message)
-- Returns:  void; MB002 unknown queue, MB003 trigger exists, MB004 bad selector, MB006 cycle
-- Locks:    pg_advisory_xact_lock(1835165041) (serializes every catalog change of queues:
--           create/drop of queues, consumers, triggers, clear_tempq); the CREATE OR REPLACE of
--           src's generated functions
-- Calls:    mbus.check_selector, mbus.regenerate_queue, mbus.require_queue
-- Tables:   mbus.queue_trigger
CREATE OR REPLACE FUNCTION mbus.create_trigger(src_queue_name text, dst_queue_name text,
                                    selector text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_queue(src_queue_name);
    PERFORM mbus.require_queue(dst_queue_name);
    IF src_queue_name = dst_queue_name THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'a trigger cannot copy a queue into itself';
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.queue_trigger AS tr
               WHERE tr.src = src_queue_name AND tr.dst = dst_queue_name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = format('trigger %s -> %s exists already', src_queue_name, dst_queue_name);
    END IF;
    -- Refuse cycles: a message would be copied forever.
    IF EXISTS (
        WITH RECURSIVE reach(q) AS (
            SELECT dst_queue_name
            UNION
            SELECT tr.dst FROM mbus.queue_trigger AS tr JOIN reach ON tr.src = reach.q)
        SELECT 1 FROM reach WHERE reach.q = src_queue_name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('trigger %s -> %s would make a cycle', src_queue_name, dst_queue_name);
    END IF;
    PERFORM mbus.check_selector(selector);
    INSERT INTO mbus.queue_trigger (src, dst, selector)
    VALUES (src_queue_name, dst_queue_name, selector);
    PERFORM mbus.regenerate_queue(src_queue_name);
END;
$$;
