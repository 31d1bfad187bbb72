-- post 100 messages per call: raw SQL
INSERT INTO raw_queue (payload) SELECT p FROM unnest(array_fill(:payload::jsonb, ARRAY[100])) AS p;
