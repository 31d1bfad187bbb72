-- consume 1 message per transaction: raw SQL
DELETE FROM raw_queue
WHERE id = (SELECT id FROM raw_queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, payload;
