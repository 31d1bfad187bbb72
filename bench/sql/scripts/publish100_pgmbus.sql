-- publish 100 events per statement: pgmbus publish_batch
SELECT mbus.publish_batch('bench', array_fill(:payload::jsonb, ARRAY[100]));
