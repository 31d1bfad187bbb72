-- post 1 message with headers per transaction: raw SQL (the reference: a plain INSERT)
INSERT INTO raw_queue (payload) VALUES (:payload::jsonb);
