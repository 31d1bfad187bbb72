-- post 1 message per transaction: PGMQ
SELECT pgmq.send('bench', :payload::jsonb);
