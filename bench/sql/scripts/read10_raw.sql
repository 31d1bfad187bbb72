-- read the next 10 events and move the group's cursor, one transaction: raw keyset scan
-- (by id alone: it would skip a transaction that commits late; the floor, not a peer)
WITH b AS (SELECT id, payload FROM raw_events
           WHERE id > (SELECT pos FROM raw_cursor) ORDER BY id LIMIT 10),
     u AS (UPDATE raw_cursor SET pos = (SELECT max(id) FROM b) WHERE EXISTS (SELECT FROM b))
SELECT id, payload FROM b;
