-- consume 100 messages per call: PGMQ read (visibility timeout 30 s) then delete of their ids,
-- two transactions as a PGMQ consumer does; the read's rows come back as arrays.
SELECT array_agg(msg_id) AS ids, array_agg(message) AS messages FROM pgmq.read('bench', 30, 100) \gset got_
SELECT pgmq.delete('bench', :got_ids::bigint[]);
