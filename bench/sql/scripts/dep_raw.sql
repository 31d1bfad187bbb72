-- the same posts and consumes, no dependency: raw SQL (two INSERTs, two DELETE ... SKIP LOCKED)
INSERT INTO raw_queue (payload) VALUES (:payload::jsonb) RETURNING id AS first \gset
INSERT INTO raw_queue (payload) VALUES (:payload::jsonb);
DELETE FROM raw_queue
WHERE id = (SELECT id FROM raw_queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, payload;
DELETE FROM raw_queue
WHERE id = (SELECT id FROM raw_queue ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, payload;
