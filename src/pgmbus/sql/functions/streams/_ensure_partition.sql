-- Function: mbus._ensure_partition(p_no)
--
-- Purpose:  Create partition n of mbus.events, mbus.events_<n, 7 digits>, for the ids
--           [n * 2^40, (n + 1) * 2^40), and record it in mbus.event_partitions; nothing when it is
--           recorded already. Event ids come from one sequence, so partitions follow time; maintain
--           moves the sequence to the next partition's range when the partition interval has
--           passed. Partitions are insert-only, so insert-driven autovacuum is off
--           (autovacuum_vacuum_insert_threshold = -1; analyze still runs).
-- Params:   p_no  the partition number n (integer)
-- Returns:  boolean: true when it created the partition, false when it existed
-- Locks:    CREATE TABLE ... PARTITION OF takes ACCESS EXCLUSIVE on mbus.events itself (the
--           parent) until commit: publishers and readers wait meanwhile (a known limit:
--           CREATE TABLE then ATTACH PARTITION would take only
--           SHARE UPDATE EXCLUSIVE on the parent); the new partition's row in
--           mbus.event_partitions
-- Calls:    none
-- Tables:   mbus.event_partitions, mbus.events
CREATE OR REPLACE FUNCTION mbus._ensure_partition(p_no integer)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_name text := format('events_%s', lpad(p_no::text, 7, '0'));
    v_lo bigint := p_no::bigint << 40;
BEGIN
    IF EXISTS (SELECT 1 FROM mbus.event_partitions AS p WHERE p.partition_no = p_no) THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE mbus.%I PARTITION OF mbus.events FOR VALUES FROM (%s) TO (%s) '
                   'WITH (autovacuum_vacuum_insert_threshold = -1)',
                   v_name, v_lo, v_lo + (1::bigint << 40));
    INSERT INTO mbus.event_partitions (partition_no, name, lo_id, hi_id)
    VALUES (p_no, v_name, v_lo, v_lo + (1::bigint << 40));
    RETURN true;
END;
$$;
