-- Function: mbus.segment_of(qname)
--
-- Purpose:  segment_of(qname): the segment new deliveries of qname go to (the seg column's default).
-- Params:   qname text FILL
-- Returns:  smallint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.segment_of(qname text)
RETURNS smallint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = segment_of.qname),
                    1::smallint);
$$;
