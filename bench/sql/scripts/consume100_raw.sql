-- consume 100 messages per call: raw SQL
DELETE FROM raw_queue WHERE id = ANY (ARRAY(
    SELECT id FROM raw_queue ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED))
RETURNING id, payload;
