-- Function: mbus.stamp_headers(headers, qname, added)
--
-- Purpose:  stamp_headers(headers, qname, added): the headers a message carries in queue qname:
--           seenby (databases it passed, this one appended once), source_db and enqueue_time kept from
--           the original post, destination = this queue.
-- Params:   headers jsonb FILL
--           qname text FILL
--           added timestamptz FILL
-- Returns:  jsonb
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.stamp_headers(headers jsonb, qname text, added timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT h || jsonb_build_object(
        'seenby', CASE
            WHEN jsonb_typeof(h -> 'seenby') <> 'array' OR h -> 'seenby' IS NULL
                THEN jsonb_build_array(current_database())
            WHEN (h -> 'seenby') ? current_database() THEN h -> 'seenby'
            ELSE (h -> 'seenby') || to_jsonb(current_database()) END,
        'source_db', coalesce(h ->> 'source_db', current_database()),
        'destination', qname,
        'enqueue_time', coalesce(h -> 'enqueue_time', to_jsonb(added)))
    FROM (SELECT coalesce(headers, '{}'::jsonb) AS h) AS s;
$$;
