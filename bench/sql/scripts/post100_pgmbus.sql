-- post 100 messages per call: pgmbus (the queue's generated batch post function; returns iids)
SELECT mbus.postn_bench(array_fill(:payload::jsonb, ARRAY[100]));
