-- publish 100 events per statement, one publish call per row: pgmbus
SELECT mbus.publish('bench', p) FROM unnest(array_fill(:payload::jsonb, ARRAY[100])) AS p;
