-- read the next batch (10 events between two ticks) and finish it, one transaction: PgQ
BEGIN;
SELECT pgq.next_batch('bench', 'reader') AS batch_id \gset got_
SELECT ev_id, ev_data FROM pgq.get_batch_events(:got_batch_id) \aset ev_
SELECT pgq.finish_batch(:got_batch_id);
COMMIT;
