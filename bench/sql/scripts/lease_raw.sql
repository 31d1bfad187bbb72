-- lease 1 message (visibility timeout 30 s, a token) then acknowledge it: raw SQL
UPDATE raw_lease SET vt = now() + interval '30 seconds', token = gen_random_uuid()
WHERE id = (SELECT id FROM raw_lease WHERE vt <= now() ORDER BY vt, id LIMIT 1
            FOR UPDATE SKIP LOCKED)
RETURNING id AS got_id, token AS got_token, payload AS got_payload \gset
DELETE FROM raw_lease WHERE id = :got_id AND token = :got_token::uuid;
