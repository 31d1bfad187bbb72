-- timers: scheduled HTTP callbacks (the CallMeBack design) stored in schema mbus.
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
) WITH (fillfactor = 80);
  -- room for the in-page (HOT) updates of claims
COMMENT ON TABLE mbus.timer_callbacks IS
    'Scheduled HTTP callbacks (CallMeBack events) keyed by (client_id, group_key, event_key).';

-- the claim's scan: due pending callbacks in (run_at, id) order
CREATE INDEX timer_callbacks_due ON mbus.timer_callbacks (run_at, id)
    INCLUDE (bucket_id) WHERE status = 'pending';

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
