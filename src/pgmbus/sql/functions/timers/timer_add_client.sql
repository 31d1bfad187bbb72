-- Function: mbus.timer_add_client(p_name)
--
-- Purpose:  Create an owner client of timer callbacks. Generates its API key ('pmk_' and 64 hex
--           digits from two random UUIDs) and its HMAC signing secret ('whsec_' and 64 hex
--           digits). The key is returned only now: the table keeps its sha256, which
--           mbus.timer_authenticate compares; the secret is kept, as the dispatcher signs every
--           callback with it. The name is checked by mbus.check_name (and the table's CHECK).
-- Params:   p_name  the client's name (text; lower-case identifier, at most 64 bytes)
-- Returns:  one row (client_id bigint, api_key text, signing_secret text); MB003 when a client
--           of that name exists, MB006 for a bad name
-- Locks:    inserts the mbus.timer_clients row; a concurrent insert of the same name makes it
--           wait for that transaction (unique index)
-- Calls:    mbus.check_name
-- Tables:   mbus.timer_clients
CREATE OR REPLACE FUNCTION mbus.timer_add_client(p_name text,
    OUT client_id bigint, OUT api_key text, OUT signing_secret text)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('client', p_name, 64);
    api_key := 'pmk_' || replace(gen_random_uuid()::text, '-', '')
                      || replace(gen_random_uuid()::text, '-', '');
    signing_secret := 'whsec_' || replace(gen_random_uuid()::text, '-', '')
                               || replace(gen_random_uuid()::text, '-', '');
    INSERT INTO mbus.timer_clients (name, key_hash, signing_secret, created_at)
    VALUES (p_name, sha256(convert_to(api_key, 'UTF8')), signing_secret, now())
    ON CONFLICT (name) DO NOTHING
    RETURNING id INTO client_id;
    IF client_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = format('timer client %L exists', p_name);
    END IF;
END;
$$;
