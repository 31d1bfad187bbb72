-- 0006 http scopes: API key scopes and HTTP stream leases.
--   * mbus.timer_clients.scopes: what an API key may do beyond its own timers, as
--     'engine:action:glob' strings (engine queues|streams|timers, action read|consume|post|write,
--     glob over queue, topic, group or client names); docs/operations.md states the rules;
--   * mbus.http_stream_leases: batches read over HTTP and not yet committed, one live lease per
--     group and slot (mbus.http_read / http_commit / http_extend);
--   * an index on mbus.timer_attempts (started_at) for the recent-window timer metrics.

ALTER TABLE mbus.timer_clients
    ADD COLUMN scopes text[] NOT NULL DEFAULT '{}'
    CONSTRAINT timer_clients_scopes_valid CHECK (
        cardinality(scopes) <= 100
        AND array_position(scopes, NULL) IS NULL
        AND (cardinality(scopes) = 0
             OR array_to_string(scopes, ',')
                ~ ('^((queues|streams|timers):(read|consume|post|write):[^[:space:],]{1,200})'
                   || '(,(queues|streams|timers):(read|consume|post|write)'
                   || ':[^[:space:],]{1,200})*$')));

COMMENT ON COLUMN mbus.timer_clients.scopes IS
    'What the API key may do beyond its own timers: engine:action:glob (docs/operations.md).';

CREATE TABLE mbus.http_stream_leases (
    group_name  text        NOT NULL REFERENCES mbus.stream_groups ON DELETE CASCADE,
    slot        integer     NOT NULL CHECK (slot >= 0),
    token       uuid        NOT NULL UNIQUE,
    from_cursor text        NOT NULL,
    to_cursor   text        NOT NULL,
    events      integer     NOT NULL CHECK (events > 0),
    client_id   bigint      REFERENCES mbus.timer_clients ON DELETE CASCADE,
    leased_at   timestamptz NOT NULL,
    lease_until timestamptz NOT NULL,
    PRIMARY KEY (group_name, slot),
    CHECK (lease_until > leased_at)
);

COMMENT ON TABLE mbus.http_stream_leases IS
    'Batches read over HTTP and not yet committed: one live lease per group and slot.';

-- The timers' recent-window metrics (calls by outcome, lateness) read attempts by start time.
CREATE INDEX timer_attempts_started ON mbus.timer_attempts (started_at);
