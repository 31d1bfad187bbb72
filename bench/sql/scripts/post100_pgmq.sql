-- post 100 messages per call: PGMQ
SELECT pgmq.send_batch('bench', array_fill(:payload::jsonb, ARRAY[100]));
