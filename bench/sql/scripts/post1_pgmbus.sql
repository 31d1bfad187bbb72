-- post 1 message per transaction: pgmbus (the queue's generated post function)
SELECT mbus.post_bench(:payload::jsonb);
