-- lease 1 message (30 s) then acknowledge it: pgmbus (generated lease and ack functions)
SELECT id, lease_token, data FROM mbus.lease_bench_by_default(1, interval '30 seconds') \gset got_
SELECT mbus.ack_bench(:got_lease_token::uuid);
