-- post 1 message with a client-given iid per transaction: pgmbus (remembered in mbus.client_iids)
SELECT mbus.post_bench(:payload::jsonb, iid => gen_random_uuid()::text);
