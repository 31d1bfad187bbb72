-- Setup, fill and backlog blocks of the sql_timers scenario (bench.sql.model.queries).

-- name: mbus_defines
-- a client, and one dispatcher ('bench') that holds every bucket for the whole run
SELECT c.client_id AS tclient, mbus.timer_heartbeat('bench', 86400)::text AS buckets
FROM mbus.timer_add_client('bench') AS c

-- name: raw_timers
-- The floor: a table with what a due-time claim needs (no retries policy, no history).
CREATE TABLE raw_timers (
    id bigserial PRIMARY KEY,
    client_id bigint NOT NULL,
    group_key text NOT NULL,
    event_key text NOT NULL,
    run_at timestamptz NOT NULL,
    url text NOT NULL,
    context jsonb NOT NULL DEFAULT '{}',
    status text NOT NULL DEFAULT 'pending',
    attempts integer NOT NULL DEFAULT 0,
    claimed_until timestamptz,
    UNIQUE (client_id, group_key, event_key));
CREATE INDEX raw_timers_due ON raw_timers (run_at, id) WHERE status = 'pending'

-- name: raw_defines
SELECT 1 AS tclient

-- name: mbus_fill
SELECT count(*) FROM mbus.timer_create_many((
    SELECT jsonb_agg(jsonb_build_object(
        'client_id', %(tclient)s::bigint, 'group_key', 'fill', 'event_key', gen_random_uuid(),
        'run_at', now() - interval '1 minute', 'url', 'http://127.0.0.1:9/cb'))
    FROM generate_series(1, %(n)s)))

-- name: mbus_backlog
SELECT count(*) FROM mbus.timer_callbacks WHERE status = 'pending'

-- name: raw_fill
INSERT INTO raw_timers (client_id, group_key, event_key, run_at, url)
SELECT 1, 'fill', gen_random_uuid()::text, now() - interval '1 minute', 'http://127.0.0.1:9/cb'
FROM generate_series(1, %(n)s)

-- name: raw_backlog
SELECT count(*) FROM raw_timers WHERE status = 'pending'
