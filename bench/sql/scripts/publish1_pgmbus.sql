-- publish 1 event per transaction: pgmbus
SELECT mbus.publish('bench', :payload::jsonb);
