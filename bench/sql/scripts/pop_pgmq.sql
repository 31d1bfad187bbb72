-- consume 1 message per transaction: PGMQ pop
SELECT * FROM pgmq.pop('bench');
