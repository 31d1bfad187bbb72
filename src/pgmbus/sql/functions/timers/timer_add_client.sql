-- Function: mbus.timer_add_client()
--
-- Purpose:  clients
--           timer_add_client(name): create an owner client; returns its id, its API key (shown only
--           now: the table keeps its sha256) and its HMAC signing secret. MB003 when the name exists.
-- Params:   none
-- Returns:  FILL
-- Locks:    FILL
-- Callers:  FILL
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
