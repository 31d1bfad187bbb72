-- post 1 message per transaction: raw SQL
INSERT INTO raw_queue (payload) VALUES (:payload::jsonb);
