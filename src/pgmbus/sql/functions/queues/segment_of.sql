-- Function: mbus.segment_of(qname)
--
-- Purpose:  The segment new deliveries of qname go to: the current rotating segment
--           (mbus.queue_segment.cur, 1..3; 1 when the queue has no row there yet). It is the
--           default of the seg column of mbus.q_<qname>, and the generated post functions call it
--           too, so both pick the segment by the same rule.
-- Params:   qname  the queue's name (text)
-- Returns:  smallint: the segment number
-- Locks:    none (reads mbus.queue_segment)
-- Calls:    none
-- Tables:   mbus.queue_segment
CREATE OR REPLACE FUNCTION mbus.segment_of(qname text)
RETURNS smallint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = segment_of.qname),
                    1::smallint);
$$;
