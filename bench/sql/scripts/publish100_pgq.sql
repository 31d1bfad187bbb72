-- publish 100 events per statement, one insert_event call per row: PgQ (it has no batch call)
SELECT pgq.insert_event('bench', 'bench', p) FROM unnest(array_fill(:payload::text, ARRAY[100])) AS p;
