-- publish 1 event per transaction: PgQ
SELECT pgq.insert_event('bench', 'bench', :payload);
