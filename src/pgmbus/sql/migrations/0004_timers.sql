-- timers: scheduled HTTP callbacks (the CallMeBack seed) stored in schema mbus.
--
-- Tables (all prefixed timer_):
--   timer_clients      owner clients: API key hash and HMAC signing secret
--   timer_buckets      a fixed set of buckets; each is leased by one dispatcher at a time
--   timer_dispatchers  live dispatchers (heartbeats), to spread buckets fairly
--   timer_callbacks    callbacks keyed by (client, group_key, event_key) with their status
--   timer_attempts     every HTTP call made for a callback (its delivery history)
--   timer_change_log   every user change (create, update, cancel, delete) and status transition
--   timer_schedules    recurring schedules (cron with a time zone, or a fixed interval)
--   timer_jobs         last run of periodic maintenance jobs (daily cleanup)
--
-- Dispatch without a global lock: a dispatcher claims due callbacks with
--   status = 'pending' AND run_at <= now AND (unclaimed OR claim expired)
--   ORDER BY run_at, id ... FOR UPDATE SKIP LOCKED
-- in the buckets it leases. There is no watermark (no "max run_at/id seen so far"), so a
-- callback committed late by a concurrent transaction, or inserted with run_at in the past,
-- simply matches the next poll: nothing can be skipped, and inserters never wait on a lock.
-- A claim increments `attempts` and sets claimed_by/claimed_until; the result is recorded only
-- while that claim is still the current one, so an expired claim's late result is ignored and
-- two dispatchers never record (or make) the same attempt.
--
-- Every clock-dependent function takes p_now timestamptz DEFAULT NULL (NULL = now()).

-- --------------------------------------------------------------------------------------------
-- tables
-- --------------------------------------------------------------------------------------------
CREATE TABLE mbus.timer_clients (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name           text        NOT NULL UNIQUE
                   CHECK (name ~ '^[a-z][a-z0-9_]*$' AND octet_length(name) <= 64),
    key_hash       bytea       NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
    signing_secret text        NOT NULL CHECK (octet_length(signing_secret) >= 32),
    created_at     timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE mbus.timer_clients IS
    'Owner clients of timer callbacks: sha256 of the API key and the HMAC signing secret.';

CREATE TABLE mbus.timer_buckets (
    id          integer PRIMARY KEY CHECK (id >= 0),
    owner       text,
    lease_until timestamptz,
    CHECK ((owner IS NULL) = (lease_until IS NULL))
);
COMMENT ON TABLE mbus.timer_buckets IS
    'Buckets of callbacks; each is served by the dispatcher holding its lease.';
INSERT INTO mbus.timer_buckets (id) SELECT g FROM generate_series(0, 63) AS g;

CREATE TABLE mbus.timer_dispatchers (
    id           text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 200),
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL
);

CREATE TABLE mbus.timer_schedules (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    client_id          bigint      NOT NULL REFERENCES mbus.timer_clients ON DELETE CASCADE,
    schedule_key       text        NOT NULL
                       CHECK (schedule_key !~ '[/[:cntrl:]]'
                              AND length(schedule_key) BETWEEN 1 AND 200),
    group_key          text        NOT NULL
                       CHECK (group_key !~ '[/[:cntrl:]]' AND length(group_key) BETWEEN 1 AND 256),
    cron               text,
    timezone           text        NOT NULL DEFAULT 'UTC',
    interval_s         integer     CHECK (interval_s >= 1),
    start_at           timestamptz NOT NULL,
    end_at             timestamptz,
    url                text        NOT NULL CHECK (url ~* '^https?://[^[:space:]]+$'),
    context            jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(context) = 'object'),
    retry              jsonb       NOT NULL,
    stop_after_delay_s double precision NOT NULL CHECK (stop_after_delay_s >= 0),
    paused             boolean     NOT NULL DEFAULT false,
    generated_until    timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    UNIQUE (client_id, schedule_key),
    CHECK ((cron IS NULL) <> (interval_s IS NULL)),
    CHECK (end_at IS NULL OR end_at > start_at)
);
COMMENT ON TABLE mbus.timer_schedules IS
    'Recurring schedules; callbacks are generated up to generated_until (never twice: the '
    'generated event key is derived from the occurrence time and unique per client and group).';

CREATE TABLE mbus.timer_callbacks (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    client_id          bigint      NOT NULL REFERENCES mbus.timer_clients ON DELETE CASCADE,
    group_key          text        NOT NULL
                       CHECK (group_key !~ '[/[:cntrl:]]' AND length(group_key) BETWEEN 1 AND 256),
    event_key          text        NOT NULL
                       CHECK (event_key !~ '[/[:cntrl:]]' AND length(event_key) BETWEEN 1 AND 256),
    run_at             timestamptz NOT NULL,
    originally_run_at  timestamptz NOT NULL,
    url                text        NOT NULL CHECK (url ~* '^https?://[^[:space:]]+$'),
    context            jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(context) = 'object'),
    fast_retries       integer     NOT NULL CHECK (fast_retries BETWEEN 0 AND 10),
    retry_kind         text        NOT NULL CHECK (retry_kind IN ('constant', 'exponential')),
    retry_delay_s      double precision NOT NULL CHECK (retry_delay_s > 0),
    retry_factor       double precision NOT NULL CHECK (retry_factor >= 1),
    retry_max_delay_s  double precision NOT NULL CHECK (retry_max_delay_s > 0),
    stop_after_delay_s double precision NOT NULL CHECK (stop_after_delay_s >= 0),
    bucket_id          integer     NOT NULL,
    status             text        NOT NULL DEFAULT 'pending'
                       CHECK (status IN ('pending', 'notified', 'failed', 'cancelled', 'rejected')),
    webhook_id         uuid        NOT NULL DEFAULT gen_random_uuid() UNIQUE,
    attempts           integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    claimed_by         text,
    claimed_until      timestamptz,
    schedule_id        bigint REFERENCES mbus.timer_schedules ON DELETE SET NULL,
    last_status_code   integer,
    last_error         text,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    finished_at        timestamptz,
    UNIQUE (client_id, group_key, event_key),
    -- a finished callback has its finish time and no claim; a pending one neither
    CHECK ((status = 'pending') = (finished_at IS NULL)),
    CHECK ((claimed_by IS NULL) = (claimed_until IS NULL)),
    CHECK (claimed_by IS NULL OR status = 'pending')
) WITH (fillfactor = 80);  -- room for the in-page (HOT) updates of claims
COMMENT ON TABLE mbus.timer_callbacks IS
    'Scheduled HTTP callbacks (CallMeBack events) keyed by (client_id, group_key, event_key).';
-- the claim's scan: due pending callbacks in (run_at, id) order
CREATE INDEX timer_callbacks_due ON mbus.timer_callbacks (run_at, id)
    INCLUDE (bucket_id) WHERE status = 'pending';
-- the seed's per-bucket index, for per-bucket inspection and counts
CREATE INDEX timer_callbacks_bucket ON mbus.timer_callbacks (bucket_id, run_at, id)
    WHERE status = 'pending';
CREATE INDEX timer_callbacks_client ON mbus.timer_callbacks (client_id, id);
CREATE INDEX timer_callbacks_finished ON mbus.timer_callbacks (run_at) WHERE status <> 'pending';
CREATE INDEX timer_callbacks_schedule ON mbus.timer_callbacks (schedule_id, run_at)
    WHERE schedule_id IS NOT NULL;

CREATE TABLE mbus.timer_attempts (
    callback_id bigint      NOT NULL REFERENCES mbus.timer_callbacks ON DELETE CASCADE,
    attempt     integer     NOT NULL CHECK (attempt >= 1),
    call        integer     NOT NULL CHECK (call >= 0),
    dispatcher  text        NOT NULL,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL,
    outcome     text        NOT NULL CHECK (outcome IN ('ok', 'reject', 'error', 'refused')),
    status_code integer,
    error       text,
    PRIMARY KEY (callback_id, attempt, call)
);
COMMENT ON TABLE mbus.timer_attempts IS
    'Every HTTP call of a callback: attempt = the claim number, call = the fast retry index.';

CREATE TABLE mbus.timer_change_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    callback_id bigint      NOT NULL,
    client_id   bigint      NOT NULL,
    group_key   text        NOT NULL,
    event_key   text        NOT NULL,
    action      text        NOT NULL
                CHECK (action IN ('create', 'update', 'cancel', 'delete', 'status', 'retry')),
    old_status  text,
    new_status  text,
    changes     jsonb
);
COMMENT ON TABLE mbus.timer_change_log IS
    'User changes (create, update, cancel, delete), status transitions and reschedules.';
CREATE INDEX timer_change_log_callback ON mbus.timer_change_log (callback_id, id);
CREATE INDEX timer_change_log_at ON mbus.timer_change_log (at);

CREATE TABLE mbus.timer_jobs (
    name        text PRIMARY KEY,
    last_run_at timestamptz
);
INSERT INTO mbus.timer_jobs (name) VALUES ('clean');

-- --------------------------------------------------------------------------------------------
-- clients
-- --------------------------------------------------------------------------------------------
-- timer_add_client(name): create an owner client; returns its id, its API key (shown only
-- now: the table keeps its sha256) and its HMAC signing secret. MB003 when the name exists.
CREATE FUNCTION mbus.timer_add_client(p_name text,
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

-- timer_authenticate(api_key): the client id owning the key, or NULL.
CREATE FUNCTION mbus.timer_authenticate(p_api_key text)
RETURNS bigint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT c.id FROM mbus.timer_clients AS c
    WHERE c.key_hash = sha256(convert_to(p_api_key, 'UTF8'));
$$;

-- --------------------------------------------------------------------------------------------
-- callbacks: JSON view, create, get, list, update, cancel, delete, history
-- --------------------------------------------------------------------------------------------
-- timer_callback_json(c): the public JSON shape of a callback (what the HTTP API returns).
CREATE FUNCTION mbus.timer_callback_json(c mbus.timer_callbacks)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT jsonb_build_object(
        'id', c.id, 'group_key', c.group_key, 'event_key', c.event_key,
        'run_at', c.run_at, 'originally_run_at', c.originally_run_at,
        'url', c.url, 'context', c.context,
        'retry', jsonb_build_object('fast_retries', c.fast_retries, 'kind', c.retry_kind,
                                    'delay_s', c.retry_delay_s, 'factor', c.retry_factor,
                                    'max_delay_s', c.retry_max_delay_s),
        'stop_after_delay_s', c.stop_after_delay_s,
        'status', c.status, 'attempts', c.attempts, 'webhook_id', c.webhook_id,
        'schedule_key', (SELECT s.schedule_key FROM mbus.timer_schedules AS s
                         WHERE s.id = c.schedule_id),
        'last_status_code', c.last_status_code, 'last_error', c.last_error,
        'created_at', c.created_at, 'updated_at', c.updated_at, 'finished_at', c.finished_at);
$$;

-- timer_retry_policy(retry): the retry policy with defaults filled in and values checked (MB006).
-- Defaults: 2 fast retries, constant retries every 60 s, factor 2, at most 3600 s apart.
CREATE FUNCTION mbus.timer_retry_policy(p_retry jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_in jsonb := coalesce(nullif(p_retry, 'null'), '{}');
    r jsonb;
BEGIN
    IF jsonb_typeof(v_in) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'retry must be a JSON object';
    END IF;
    r := jsonb_build_object('fast_retries', 2, 'kind', 'constant', 'delay_s', 60,
                            'factor', 2, 'max_delay_s', 3600) || jsonb_strip_nulls(v_in);
    IF (r->>'fast_retries')::numeric NOT BETWEEN 0 AND 10
       OR (r->>'fast_retries')::numeric <> trunc((r->>'fast_retries')::numeric) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'retry.fast_retries must be an integer from 0 to 10';
    END IF;
    IF r->>'kind' NOT IN ('constant', 'exponential') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('retry.kind must be constant or exponential, not %L', r->>'kind');
    END IF;
    IF (r->>'delay_s')::float8 <= 0 OR (r->>'max_delay_s')::float8 <= 0
       OR (r->>'factor')::float8 < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'retry.delay_s and max_delay_s must be > 0 and factor >= 1';
    END IF;
    RETURN r;
END;
$$;

-- timer_create_many(items, now): create callbacks in one statement (the API's batches).
-- items: a JSON array of objects {client_id, group_key, event_key, run_at, url, context?,
-- retry?, stop_after_delay_s?, originally_run_at?, schedule_id?}. Idempotent on the key: an
-- existing callback is returned unchanged with created = false (also for a key repeated in the
-- same batch: its first item creates). Returns one row per item, in item order (ord from 1).
CREATE FUNCTION mbus.timer_create_many(p_items jsonb, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (ord integer, created boolean, callback jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_buckets integer;
    v_new bigint[];
BEGIN
    IF jsonb_typeof(p_items) <> 'array' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'items must be a JSON array';
    END IF;
    SELECT count(*) INTO v_buckets FROM mbus.timer_buckets;
    WITH items AS (
        SELECT t.n::integer AS n,
               (t.i->>'client_id')::bigint AS client_id,
               t.i->>'group_key' AS group_key,
               t.i->>'event_key' AS event_key,
               (t.i->>'run_at')::timestamptz AS run_at,
               coalesce((t.i->>'originally_run_at')::timestamptz,
                        (t.i->>'run_at')::timestamptz) AS originally_run_at,
               t.i->>'url' AS url,
               coalesce(nullif(t.i->'context', 'null'), '{}') AS context,
               mbus.timer_retry_policy(t.i->'retry') AS retry,
               coalesce((t.i->>'stop_after_delay_s')::float8, 86400) AS stop_after_delay_s,
               (t.i->>'schedule_id')::bigint AS schedule_id
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
    ), ins AS (
        INSERT INTO mbus.timer_callbacks AS c (
            client_id, group_key, event_key, run_at, originally_run_at, url, context,
            fast_retries, retry_kind, retry_delay_s, retry_factor, retry_max_delay_s,
            stop_after_delay_s, bucket_id, schedule_id, created_at, updated_at)
        SELECT DISTINCT ON (i.client_id, i.group_key, i.event_key)
               i.client_id, i.group_key, i.event_key, i.run_at, i.originally_run_at, i.url,
               i.context, (i.retry->>'fast_retries')::integer, i.retry->>'kind',
               (i.retry->>'delay_s')::float8, (i.retry->>'factor')::float8,
               (i.retry->>'max_delay_s')::float8, i.stop_after_delay_s,
               (abs(hashtextextended(i.group_key || '/' || i.event_key, i.client_id))
                % v_buckets)::integer,
               i.schedule_id, v_now, v_now
        FROM items AS i
        ORDER BY i.client_id, i.group_key, i.event_key, i.n
        ON CONFLICT (client_id, group_key, event_key) DO NOTHING
        RETURNING c.id, c.client_id, c.group_key, c.event_key
    ), logged AS (
        INSERT INTO mbus.timer_change_log
            (at, callback_id, client_id, group_key, event_key, action, new_status)
        SELECT v_now, ins.id, ins.client_id, ins.group_key, ins.event_key, 'create', 'pending'
        FROM ins
    )
    SELECT array_agg(ins.id) INTO v_new FROM ins;

    RETURN QUERY
    WITH items AS (
        SELECT t.n::integer AS n, (t.i->>'client_id')::bigint AS client_id,
               t.i->>'group_key' AS group_key, t.i->>'event_key' AS event_key
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
    )
    SELECT i.n,
           c.id = ANY (coalesce(v_new, '{}'))
               AND i.n = min(i.n) OVER (PARTITION BY i.client_id, i.group_key, i.event_key),
           mbus.timer_callback_json(c)
    FROM items AS i
    JOIN mbus.timer_callbacks AS c
      ON (c.client_id, c.group_key, c.event_key) = (i.client_id, i.group_key, i.event_key)
    ORDER BY i.n;
END;
$$;

-- timer_create(...): create one callback (idempotent on the key); see timer_create_many.
CREATE FUNCTION mbus.timer_create(
    p_client_id bigint, p_group_key text, p_event_key text, p_run_at timestamptz, p_url text,
    p_context jsonb DEFAULT '{}', p_retry jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL,
    p_originally_run_at timestamptz DEFAULT NULL, p_now timestamptz DEFAULT NULL,
    OUT created boolean, OUT callback jsonb)
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    SELECT m.created, m.callback
    FROM mbus.timer_create_many(
        jsonb_build_array(jsonb_build_object(
            'client_id', p_client_id, 'group_key', p_group_key, 'event_key', p_event_key,
            'run_at', p_run_at, 'url', p_url, 'context', p_context, 'retry', p_retry,
            'stop_after_delay_s', p_stop_after_delay_s,
            'originally_run_at', p_originally_run_at)),
        p_now) AS m;
$$;

-- timer_get(client, group_key, event_key): the callback's JSON; MB002 when there is none.
CREATE FUNCTION mbus.timer_get(p_client_id bigint, p_group_key text, p_event_key text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v jsonb;
BEGIN
    SELECT mbus.timer_callback_json(c) INTO v FROM mbus.timer_callbacks AS c
    WHERE c.client_id = p_client_id AND c.group_key = p_group_key AND c.event_key = p_event_key;
    IF v IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no callback %s/%s', p_group_key, p_event_key);
    END IF;
    RETURN v;
END;
$$;

-- timer_list(client, group_key, status, limit, after): the client's callbacks in id order,
-- optionally of one group and one status, those with id > after (paging), at most limit.
CREATE FUNCTION mbus.timer_list(p_client_id bigint, p_group_key text DEFAULT NULL,
    p_status text DEFAULT NULL, p_limit integer DEFAULT 100, p_after bigint DEFAULT 0)
RETURNS SETOF jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'limit must be from 1 to 1000';
    END IF;
    IF p_status IS NOT NULL
       AND p_status NOT IN ('pending', 'notified', 'failed', 'cancelled', 'rejected') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('unknown status %L', p_status);
    END IF;
    RETURN QUERY
    SELECT mbus.timer_callback_json(c) FROM mbus.timer_callbacks AS c
    WHERE c.client_id = p_client_id
      AND (p_group_key IS NULL OR c.group_key = p_group_key)
      AND (p_status IS NULL OR c.status = p_status)
      AND c.id > coalesce(p_after, 0)
    ORDER BY c.id
    LIMIT p_limit;
END;
$$;

-- timer_lock(client, group_key, event_key): lock and return the callback row (MB002 if none).
CREATE FUNCTION mbus.timer_lock(p_client_id bigint, p_group_key text, p_event_key text)
RETURNS mbus.timer_callbacks
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    c mbus.timer_callbacks;
BEGIN
    SELECT * INTO c FROM mbus.timer_callbacks AS t
    WHERE t.client_id = p_client_id AND t.group_key = p_group_key AND t.event_key = p_event_key
    FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no callback %s/%s', p_group_key, p_event_key);
    END IF;
    RETURN c;
END;
$$;

-- timer_update(client, group_key, event_key, run_at, originally_run_at, url, context,
--              i_ensure_pending, now): change a callback (NULL = keep). Only a pending
-- callback may change, or a cancelled one when i_ensure_pending is true, which makes it
-- pending again (the seed's rule); else MB008. A new run_at without originally_run_at sets
-- both. An in-flight claim is dropped, so the change wins over a delivery in progress.
CREATE FUNCTION mbus.timer_update(p_client_id bigint, p_group_key text, p_event_key text,
    p_run_at timestamptz DEFAULT NULL, p_originally_run_at timestamptz DEFAULT NULL,
    p_url text DEFAULT NULL, p_context jsonb DEFAULT NULL,
    p_i_ensure_pending boolean DEFAULT false, p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    c mbus.timer_callbacks := mbus.timer_lock(p_client_id, p_group_key, p_event_key);
    n mbus.timer_callbacks;
    v_changes jsonb := '{}';
BEGIN
    IF NOT (c.status = 'pending' OR (c.status = 'cancelled' AND p_i_ensure_pending)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('callback %s/%s is %s; only pending callbacks can be updated',
                             p_group_key, p_event_key, c.status),
            HINT = CASE WHEN c.status = 'cancelled'
                        THEN 'pass i_ensure_pending to update it and make it pending again'
                        ELSE 'finished callbacks cannot change' END;
    END IF;
    IF p_context IS NOT NULL AND jsonb_typeof(p_context) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'context must be a JSON object';
    END IF;
    UPDATE mbus.timer_callbacks AS t SET
        run_at = coalesce(p_run_at, t.run_at),
        originally_run_at = coalesce(p_originally_run_at, p_run_at, t.originally_run_at),
        url = coalesce(p_url, t.url),
        context = coalesce(p_context, t.context),
        status = 'pending', finished_at = NULL, claimed_by = NULL, claimed_until = NULL,
        updated_at = v_now
    WHERE t.id = c.id
    RETURNING * INTO n;
    IF n.run_at IS DISTINCT FROM c.run_at THEN
        v_changes := v_changes || jsonb_build_object('run_at',
            jsonb_build_array(c.run_at, n.run_at));
    END IF;
    IF n.originally_run_at IS DISTINCT FROM c.originally_run_at THEN
        v_changes := v_changes || jsonb_build_object('originally_run_at',
            jsonb_build_array(c.originally_run_at, n.originally_run_at));
    END IF;
    IF n.url IS DISTINCT FROM c.url THEN
        v_changes := v_changes || jsonb_build_object('url', jsonb_build_array(c.url, n.url));
    END IF;
    IF n.context IS DISTINCT FROM c.context THEN
        v_changes := v_changes || jsonb_build_object('context',
            jsonb_build_array(c.context, n.context));
    END IF;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, new_status, changes)
    VALUES (v_now, c.id, c.client_id, c.group_key, c.event_key, 'update', c.status, n.status,
            v_changes);
    RETURN mbus.timer_callback_json(n);
END;
$$;

-- timer_cancel(client, group_key, event_key, now): cancel a pending callback (else MB008).
CREATE FUNCTION mbus.timer_cancel(p_client_id bigint, p_group_key text, p_event_key text,
    p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    c mbus.timer_callbacks := mbus.timer_lock(p_client_id, p_group_key, p_event_key);
    n mbus.timer_callbacks;
BEGIN
    IF c.status <> 'pending' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('callback %s/%s is %s; only pending callbacks can be cancelled',
                             p_group_key, p_event_key, c.status);
    END IF;
    UPDATE mbus.timer_callbacks AS t
    SET status = 'cancelled', finished_at = v_now, updated_at = v_now,
        claimed_by = NULL, claimed_until = NULL
    WHERE t.id = c.id
    RETURNING * INTO n;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, new_status)
    VALUES (v_now, c.id, c.client_id, c.group_key, c.event_key, 'cancel', 'pending', 'cancelled');
    RETURN mbus.timer_callback_json(n);
END;
$$;

-- timer_delete(client, group_key, event_key, force, now): delete a callback. Refused (MB008)
-- for a pending callback due in less than one minute (or overdue) unless force (the seed).
CREATE FUNCTION mbus.timer_delete(p_client_id bigint, p_group_key text, p_event_key text,
    p_force boolean DEFAULT false, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    c mbus.timer_callbacks := mbus.timer_lock(p_client_id, p_group_key, p_event_key);
BEGIN
    IF NOT p_force AND c.status = 'pending' AND c.run_at < v_now + interval '1 minute' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('callback %s/%s is pending and due within one minute',
                             p_group_key, p_event_key),
            HINT = 'cancel it, or delete with force';
    END IF;
    DELETE FROM mbus.timer_callbacks AS t WHERE t.id = c.id;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, changes)
    VALUES (v_now, c.id, c.client_id, c.group_key, c.event_key, 'delete', c.status,
            jsonb_build_object('force', p_force));
END;
$$;

-- timer_history(client, group_key, event_key): {"callback", "changes": [...], "attempts": [...]}
-- The change log outlives a deleted callback; then "callback" is null and MB002 is raised only
-- when there is no trace at all.
CREATE FUNCTION mbus.timer_history(p_client_id bigint, p_group_key text, p_event_key text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_changes jsonb;
    v_callback jsonb;
    v_attempts jsonb;
BEGIN
    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'at', l.at, 'callback_id', l.callback_id, 'action', l.action,
               'old_status', l.old_status, 'new_status', l.new_status, 'changes', l.changes)
               ORDER BY l.id), '[]')
    INTO v_changes
    FROM mbus.timer_change_log AS l
    WHERE l.client_id = p_client_id AND l.group_key = p_group_key AND l.event_key = p_event_key;
    SELECT mbus.timer_callback_json(c),
           (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'attempt', a.attempt, 'call', a.call, 'dispatcher', a.dispatcher,
                'started_at', a.started_at, 'finished_at', a.finished_at, 'outcome', a.outcome,
                'status_code', a.status_code, 'error', a.error)
                ORDER BY a.attempt, a.call), '[]')
            FROM mbus.timer_attempts AS a WHERE a.callback_id = c.id)
    INTO v_callback, v_attempts
    FROM mbus.timer_callbacks AS c
    WHERE c.client_id = p_client_id AND c.group_key = p_group_key AND c.event_key = p_event_key;
    IF v_callback IS NULL AND v_changes = '[]' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no callback %s/%s', p_group_key, p_event_key);
    END IF;
    RETURN jsonb_build_object('callback', v_callback, 'changes', v_changes,
                              'attempts', coalesce(v_attempts, '[]'));
END;
$$;

-- --------------------------------------------------------------------------------------------
-- dispatch: bucket leases, claims, results
-- --------------------------------------------------------------------------------------------
-- timer_heartbeat(dispatcher, lease_s, now): keep the dispatcher alive and rebalance buckets.
-- Renews the leases it holds; with L live dispatchers (heartbeat within lease_s) its fair
-- share is ceil(buckets / L): it releases buckets above the share and takes free or expired
-- ones (SKIP LOCKED) up to it. A dead dispatcher's buckets are free once their lease expires,
-- so takeover happens within lease_s plus one heartbeat. Returns the bucket ids it holds.
CREATE FUNCTION mbus.timer_heartbeat(p_dispatcher text, p_lease_s double precision DEFAULT 10,
    p_now timestamptz DEFAULT NULL)
RETURNS integer[]
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_until timestamptz := coalesce(p_now, now()) + make_interval(secs => p_lease_s);
    v_total integer;
    v_live integer;
    v_share integer;
    v_held integer;
BEGIN
    IF p_lease_s <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'lease_s must be > 0';
    END IF;
    INSERT INTO mbus.timer_dispatchers AS d (id, started_at, heartbeat_at)
    VALUES (p_dispatcher, v_now, v_now)
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at;
    DELETE FROM mbus.timer_dispatchers AS d
    WHERE d.heartbeat_at < v_now - make_interval(secs => 3 * p_lease_s);

    SELECT count(*) INTO v_total FROM mbus.timer_buckets;
    SELECT count(*) INTO v_live FROM mbus.timer_dispatchers AS d
    WHERE d.heartbeat_at >= v_now - make_interval(secs => p_lease_s);
    v_share := ceil(v_total::numeric / greatest(v_live, 1));

    UPDATE mbus.timer_buckets AS b SET lease_until = v_until
    WHERE b.owner = p_dispatcher AND b.lease_until > v_now;
    -- a lease that expired may have been taken by another dispatcher meanwhile: drop ours
    UPDATE mbus.timer_buckets AS b SET owner = NULL, lease_until = NULL
    WHERE b.owner = p_dispatcher AND b.lease_until <= v_now;

    SELECT count(*) INTO v_held FROM mbus.timer_buckets AS b WHERE b.owner = p_dispatcher;
    IF v_held > v_share THEN
        UPDATE mbus.timer_buckets AS b SET owner = NULL, lease_until = NULL
        WHERE b.id IN (SELECT b2.id FROM mbus.timer_buckets AS b2
                       WHERE b2.owner = p_dispatcher
                       ORDER BY b2.id DESC LIMIT v_held - v_share);
    ELSIF v_held < v_share THEN
        WITH free AS (
            SELECT b.id FROM mbus.timer_buckets AS b
            WHERE b.owner IS NULL OR b.lease_until <= v_now
            ORDER BY b.id
            LIMIT v_share - v_held
            FOR UPDATE SKIP LOCKED
        )
        UPDATE mbus.timer_buckets AS b SET owner = p_dispatcher, lease_until = v_until
        FROM free WHERE b.id = free.id;
    END IF;
    RETURN ARRAY(SELECT b.id FROM mbus.timer_buckets AS b
                 WHERE b.owner = p_dispatcher ORDER BY b.id);
END;
$$;

-- timer_release(dispatcher): a dispatcher stopping cleanly frees its buckets at once.
CREATE FUNCTION mbus.timer_release(p_dispatcher text)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    UPDATE mbus.timer_buckets AS b SET owner = NULL, lease_until = NULL
    WHERE b.owner = p_dispatcher;
    DELETE FROM mbus.timer_dispatchers AS d WHERE d.id = p_dispatcher;
$$;

-- timer_claim(dispatcher, buckets, limit, lease_s, now, lookahead_s): claim up to limit due
-- callbacks of the given buckets in (run_at, id) order. Due = pending, run_at <= now +
-- lookahead_s, and not claimed (or the claim expired). With a lookahead the dispatcher claims
-- slightly ahead and waits for run_at itself, so polling adds no lateness. Each claim
-- increments attempts (the attempt number, the claim's token) and holds the callback until
-- run_at (if later than now) + lease_s * (fast_retries + 1). No watermark is kept, so
-- late-committed and past-dated callbacks are found by the next claim.
CREATE FUNCTION mbus.timer_claim(p_dispatcher text, p_buckets integer[], p_limit integer,
    p_lease_s double precision DEFAULT 30, p_now timestamptz DEFAULT NULL,
    p_lookahead_s double precision DEFAULT 0)
RETURNS TABLE (id bigint, attempt integer, webhook_id uuid, client_id bigint, group_key text,
               event_key text, run_at timestamptz, originally_run_at timestamptz, url text,
               context jsonb, fast_retries integer, signing_secret text,
               claimed_until timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT c.id FROM mbus.timer_callbacks AS c
        WHERE c.status = 'pending' AND c.run_at <= v_now + make_interval(secs => p_lookahead_s)
          AND c.bucket_id = ANY (p_buckets)
          AND (c.claimed_until IS NULL OR c.claimed_until <= v_now)
        ORDER BY c.run_at, c.id
        LIMIT p_limit
        FOR UPDATE SKIP LOCKED
    ), claimed AS (
        UPDATE mbus.timer_callbacks AS c
        SET attempts = c.attempts + 1, claimed_by = p_dispatcher,
            claimed_until = greatest(v_now, c.run_at)
                            + make_interval(secs => p_lease_s * (c.fast_retries + 1))
        FROM due WHERE c.id = due.id
        RETURNING c.*
    )
    SELECT k.id, k.attempts, k.webhook_id, k.client_id, k.group_key, k.event_key, k.run_at,
           k.originally_run_at, k.url, k.context, k.fast_retries, cl.signing_secret,
           k.claimed_until
    FROM claimed AS k JOIN mbus.timer_clients AS cl ON cl.id = k.client_id
    ORDER BY k.run_at, k.id;
END;
$$;

-- timer_next_retry_at(c, now): when a failed attempt is retried, or NULL when the callback has
-- run out of time (the retry would fall after originally_run_at + stop_after_delay_s).
-- constant: delay_s; exponential: delay_s * factor^(attempts - 1), at most max_delay_s.
CREATE FUNCTION mbus.timer_next_retry_at(c mbus.timer_callbacks, p_now timestamptz)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT CASE WHEN t.next <= c.originally_run_at
                              + make_interval(secs => c.stop_after_delay_s)
                THEN t.next END
    FROM (SELECT p_now + make_interval(secs =>
              CASE c.retry_kind
                  WHEN 'constant' THEN c.retry_delay_s
                  ELSE least(c.retry_max_delay_s,
                             c.retry_delay_s * power(c.retry_factor,
                                                     least(greatest(c.attempts - 1, 0), 60)))
              END) AS next) AS t;
$$;

-- timer_record(results, now): record delivery results in one statement per batch.
-- results: a JSON array of {id, attempt, dispatcher, outcome, calls: [{call, started_at,
-- finished_at, outcome, status_code, error}]} where outcome is ok (2xx: notified), reject
-- (the reject header: rejected), refused (URL refused: failed) or error (retry or failed).
-- A result counts only while its claim is current (same dispatcher and attempt, still
-- pending); its calls are kept in timer_attempts either way. Returns the results applied.
CREATE FUNCTION mbus.timer_record(p_results jsonb, p_now timestamptz DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_applied integer;
BEGIN
    INSERT INTO mbus.timer_attempts AS a
        (callback_id, attempt, call, dispatcher, started_at, finished_at, outcome,
         status_code, error)
    SELECT (x->>'id')::bigint, (x->>'attempt')::integer, (k->>'call')::integer,
           x->>'dispatcher', (k->>'started_at')::timestamptz, (k->>'finished_at')::timestamptz,
           k->>'outcome', (k->>'status_code')::integer, left(k->>'error', 2000)
    FROM jsonb_array_elements(p_results) AS x, jsonb_array_elements(x->'calls') AS k
    WHERE EXISTS (SELECT FROM mbus.timer_callbacks AS t WHERE t.id = (x->>'id')::bigint)
    ON CONFLICT DO NOTHING;

    WITH r AS (
        SELECT (x->>'id')::bigint AS id, (x->>'attempt')::integer AS attempt,
               x->>'dispatcher' AS dispatcher, x->>'outcome' AS outcome,
               x->'calls'->(jsonb_array_length(x->'calls') - 1) AS last
        FROM jsonb_array_elements(p_results) AS x
    ), cur AS (
        -- only results whose claim is still current count
        SELECT c.id, c.client_id, c.group_key, c.event_key, c.run_at, r.attempt, r.last,
               CASE r.outcome WHEN 'ok' THEN 'notified' WHEN 'reject' THEN 'rejected'
                              WHEN 'refused' THEN 'failed' END AS final,
               CASE WHEN r.outcome NOT IN ('ok', 'reject', 'refused')
                    THEN mbus.timer_next_retry_at(c, v_now) END AS next
        FROM r JOIN mbus.timer_callbacks AS c
          ON c.id = r.id AND c.status = 'pending' AND c.claimed_by = r.dispatcher
         AND c.attempts = r.attempt
        ORDER BY c.id
        FOR UPDATE OF c
    ), calc AS (
        SELECT cur.*, coalesce(cur.final, CASE WHEN cur.next IS NULL THEN 'failed'
                                               ELSE 'pending' END) AS new_status
        FROM cur
    ), upd AS (
        UPDATE mbus.timer_callbacks AS t SET
            status = calc.new_status,
            run_at = coalesce(calc.next, t.run_at),
            finished_at = CASE WHEN calc.new_status = 'pending' THEN NULL ELSE v_now END,
            claimed_by = NULL, claimed_until = NULL,
            last_status_code = (calc.last->>'status_code')::integer,
            last_error = left(calc.last->>'error', 2000),
            updated_at = v_now
        FROM calc WHERE t.id = calc.id
        RETURNING t.id
    ), logged AS (
        INSERT INTO mbus.timer_change_log
            (at, callback_id, client_id, group_key, event_key, action, old_status, new_status,
             changes)
        SELECT v_now, calc.id, calc.client_id, calc.group_key, calc.event_key,
               CASE WHEN calc.new_status = 'pending' THEN 'retry' ELSE 'status' END,
               'pending', calc.new_status,
               jsonb_build_object('attempt', calc.attempt)
               || CASE WHEN calc.next IS NOT NULL
                       THEN jsonb_build_object('run_at', jsonb_build_array(calc.run_at, calc.next))
                       ELSE '{}' END
        FROM calc
    )
    SELECT count(*) INTO v_applied FROM upd;
    RETURN v_applied;
END;
$$;

-- --------------------------------------------------------------------------------------------
-- schedules
-- --------------------------------------------------------------------------------------------
-- timer_schedule_json(s): the public JSON shape of a schedule.
CREATE FUNCTION mbus.timer_schedule_json(s mbus.timer_schedules)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT jsonb_build_object(
        'id', s.id, 'schedule_key', s.schedule_key, 'group_key', s.group_key, 'cron', s.cron,
        'timezone', s.timezone, 'interval_s', s.interval_s, 'start_at', s.start_at,
        'end_at', s.end_at, 'url', s.url, 'context', s.context, 'retry', s.retry,
        'stop_after_delay_s', s.stop_after_delay_s, 'paused', s.paused,
        'generated_until', s.generated_until, 'created_at', s.created_at,
        'updated_at', s.updated_at);
$$;

-- timer_schedule_create(...): create a schedule (cron + timezone, or interval_s); idempotent
-- on (client, schedule_key): an existing schedule is returned unchanged with created = false.
-- Cron expressions are evaluated by the scheduler (pgmbus dispatcher); the time zone must be
-- known to the server (MB006 otherwise).
CREATE FUNCTION mbus.timer_schedule_create(p_client_id bigint, p_schedule_key text,
    p_url text, p_cron text DEFAULT NULL, p_timezone text DEFAULT 'UTC',
    p_interval_s integer DEFAULT NULL, p_group_key text DEFAULT NULL,
    p_context jsonb DEFAULT '{}', p_retry jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL, p_start_at timestamptz DEFAULT NULL,
    p_end_at timestamptz DEFAULT NULL, p_now timestamptz DEFAULT NULL,
    OUT created boolean, OUT schedule jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    s mbus.timer_schedules;
BEGIN
    IF (p_cron IS NULL) = (p_interval_s IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'a schedule needs exactly one of cron and interval_s';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_timezone_names WHERE name = coalesce(p_timezone, 'UTC')) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown time zone %L', p_timezone);
    END IF;
    INSERT INTO mbus.timer_schedules AS t (client_id, schedule_key, group_key, cron, timezone,
        interval_s, start_at, end_at, url, context, retry, stop_after_delay_s, generated_until,
        created_at, updated_at)
    VALUES (p_client_id, p_schedule_key, coalesce(p_group_key, p_schedule_key), p_cron,
            coalesce(p_timezone, 'UTC'), p_interval_s, coalesce(p_start_at, v_now), p_end_at,
            p_url, coalesce(p_context, '{}'), mbus.timer_retry_policy(p_retry),
            coalesce(p_stop_after_delay_s, 86400), coalesce(p_start_at, v_now), v_now, v_now)
    ON CONFLICT (client_id, schedule_key) DO NOTHING
    RETURNING * INTO s;
    created := s.id IS NOT NULL;
    IF NOT created THEN
        SELECT * INTO s FROM mbus.timer_schedules AS t
        WHERE t.client_id = p_client_id AND t.schedule_key = p_schedule_key;
    END IF;
    schedule := mbus.timer_schedule_json(s);
END;
$$;

-- timer_schedule_list(client): the client's schedules in key order.
CREATE FUNCTION mbus.timer_schedule_list(p_client_id bigint)
RETURNS SETOF jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT mbus.timer_schedule_json(s) FROM mbus.timer_schedules AS s
    WHERE s.client_id = p_client_id ORDER BY s.schedule_key;
$$;

-- timer_schedule_drop_pending(schedule_id, now): delete the schedule's pending callbacks that
-- are not yet claimed (they were generated ahead of time, never created by the user).
CREATE FUNCTION mbus.timer_schedule_drop_pending(p_schedule_id bigint, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_count integer;
BEGIN
    WITH gone AS (
        DELETE FROM mbus.timer_callbacks AS c
        WHERE c.schedule_id = p_schedule_id AND c.status = 'pending' AND c.claimed_by IS NULL
        RETURNING c.*
    ), logged AS (
        INSERT INTO mbus.timer_change_log
            (at, callback_id, client_id, group_key, event_key, action, old_status, changes)
        SELECT p_now, g.id, g.client_id, g.group_key, g.event_key, 'delete', g.status,
               '{"reason": "schedule paused or deleted"}'
        FROM gone AS g
    )
    SELECT count(*) INTO v_count FROM gone;
    RETURN v_count;
END;
$$;

-- timer_schedule_set_paused(client, schedule_key, paused, now): pause (its generated pending
-- callbacks are removed) or resume (generation restarts from now; missed occurrences are not
-- made up). MB002 when there is no such schedule.
CREATE FUNCTION mbus.timer_schedule_set_paused(p_client_id bigint, p_schedule_key text,
    p_paused boolean, p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    s mbus.timer_schedules;
BEGIN
    SELECT * INTO s FROM mbus.timer_schedules AS t
    WHERE t.client_id = p_client_id AND t.schedule_key = p_schedule_key FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no schedule %L', p_schedule_key);
    END IF;
    IF p_paused AND NOT s.paused THEN
        PERFORM mbus.timer_schedule_drop_pending(s.id, v_now);
        UPDATE mbus.timer_schedules AS t SET paused = true, updated_at = v_now
        WHERE t.id = s.id RETURNING * INTO s;
    ELSIF NOT p_paused AND s.paused THEN
        UPDATE mbus.timer_schedules AS t
        SET paused = false, generated_until = greatest(v_now, t.start_at), updated_at = v_now
        WHERE t.id = s.id RETURNING * INTO s;
    END IF;
    RETURN mbus.timer_schedule_json(s);
END;
$$;

-- timer_schedule_delete(client, schedule_key, now): delete a schedule and its generated
-- pending callbacks (finished ones stay, detached). MB002 when there is no such schedule.
CREATE FUNCTION mbus.timer_schedule_delete(p_client_id bigint, p_schedule_key text,
    p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    SELECT t.id INTO v_id FROM mbus.timer_schedules AS t
    WHERE t.client_id = p_client_id AND t.schedule_key = p_schedule_key FOR UPDATE;
    IF v_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no schedule %L', p_schedule_key);
    END IF;
    PERFORM mbus.timer_schedule_drop_pending(v_id, coalesce(p_now, now()));
    DELETE FROM mbus.timer_schedules AS t WHERE t.id = v_id;
END;
$$;

-- timer_schedules_due(horizon_s, limit, now): lock (SKIP LOCKED) and return active schedules
-- whose callbacks are generated less than horizon_s ahead. Called inside the scheduler's
-- transaction, which then calls timer_schedule_materialize for each and commits; two
-- schedulers therefore never work on the same schedule at once.
CREATE FUNCTION mbus.timer_schedules_due(p_horizon_s double precision DEFAULT 300,
    p_limit integer DEFAULT 100, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.timer_schedules
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    SELECT s.* FROM mbus.timer_schedules AS s
    WHERE NOT s.paused
      AND s.generated_until < coalesce(p_now, now()) + make_interval(secs => p_horizon_s)
      AND (s.end_at IS NULL OR s.generated_until < s.end_at)
    ORDER BY s.generated_until
    LIMIT p_limit
    FOR UPDATE SKIP LOCKED;
$$;

-- timer_schedule_materialize(schedule_id, run_ats, until, now): create the schedule's
-- callbacks for the given occurrence times and move generated_until to until. Occurrences
-- before generated_until, at or after until or end_at are ignored; the event key is
-- '<schedule_key>@<UTC time>', so an occurrence is never created twice even by two schedulers.
-- Returns how many callbacks were created.
CREATE FUNCTION mbus.timer_schedule_materialize(p_schedule_id bigint, p_run_ats timestamptz[],
    p_until timestamptz, p_now timestamptz DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    s mbus.timer_schedules;
    v_count integer;
BEGIN
    SELECT * INTO s FROM mbus.timer_schedules AS t WHERE t.id = p_schedule_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no schedule with id %s', p_schedule_id);
    END IF;
    IF s.paused THEN
        RETURN 0;
    END IF;
    SELECT count(*) FILTER (WHERE m.created) INTO v_count
    FROM mbus.timer_create_many(
        coalesce((SELECT jsonb_agg(jsonb_build_object(
                    'client_id', s.client_id, 'group_key', s.group_key,
                    'event_key', s.schedule_key || '@'
                                 || to_char(r AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                    'run_at', r, 'url', s.url, 'context', s.context, 'retry', s.retry,
                    'stop_after_delay_s', s.stop_after_delay_s, 'schedule_id', s.id)
                    ORDER BY r)
                  FROM unnest(p_run_ats) AS r
                  WHERE r >= s.generated_until AND r < p_until
                    AND (s.end_at IS NULL OR r < s.end_at)), '[]'),
        p_now) AS m;
    UPDATE mbus.timer_schedules AS t
    SET generated_until = greatest(t.generated_until, p_until)
    WHERE t.id = s.id;
    RETURN v_count;
END;
$$;

-- --------------------------------------------------------------------------------------------
-- cleanup
-- --------------------------------------------------------------------------------------------
-- timer_clean(ttl_days, now): delete finished callbacks (status <> 'pending') whose run_at is
-- older than ttl_days, with their attempts, and change log rows older than ttl_days (the seed).
CREATE FUNCTION mbus.timer_clean(p_ttl_days integer DEFAULT 30, p_now timestamptz DEFAULT NULL,
    OUT callbacks bigint, OUT changes bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_before timestamptz := coalesce(p_now, now()) - make_interval(days => p_ttl_days);
BEGIN
    IF p_ttl_days < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'ttl_days must be >= 0';
    END IF;
    WITH gone AS (
        DELETE FROM mbus.timer_callbacks AS c
        WHERE c.status <> 'pending' AND c.run_at < v_before RETURNING 1)
    SELECT count(*) INTO callbacks FROM gone;
    WITH gone AS (
        DELETE FROM mbus.timer_change_log AS l WHERE l.at < v_before RETURNING 1)
    SELECT count(*) INTO changes FROM gone;
    UPDATE mbus.timer_jobs AS j SET last_run_at = coalesce(p_now, now()) WHERE j.name = 'clean';
END;
$$;

-- timer_clean_if_due(ttl_days, every_s, now): run timer_clean when it last ran more than
-- every_s ago (default daily); several dispatchers call it, one runs it (SKIP LOCKED).
-- Returns true when it ran.
CREATE FUNCTION mbus.timer_clean_if_due(p_ttl_days integer DEFAULT 30,
    p_every_s double precision DEFAULT 86400, p_now timestamptz DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_last timestamptz;
BEGIN
    SELECT j.last_run_at INTO v_last FROM mbus.timer_jobs AS j
    WHERE j.name = 'clean' FOR UPDATE SKIP LOCKED;
    IF NOT FOUND OR (v_last IS NOT NULL
                     AND v_last > v_now - make_interval(secs => p_every_s)) THEN
        RETURN false;
    END IF;
    PERFORM mbus.timer_clean(p_ttl_days, v_now);
    RETURN true;
END;
$$;

-- --------------------------------------------------------------------------------------------
-- privileges
-- --------------------------------------------------------------------------------------------
-- PUBLIC may execute none of the timer functions (see 0001's restrict_public_execute).
SELECT mbus.restrict_public_execute();
