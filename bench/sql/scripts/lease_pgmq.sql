-- lease 1 message then acknowledge it: PGMQ read (visibility timeout 30 s) then delete
SELECT msg_id, message FROM pgmq.read('bench', 30, 1) \gset got_
SELECT pgmq.delete('bench', :got_msg_id::bigint);
