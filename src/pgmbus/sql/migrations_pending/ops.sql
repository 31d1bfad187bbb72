-- Pending migration of the ops branch (issue 15): API key scopes, HTTP stream leases, and an
-- index that keeps the timers' recent-calls metrics cheap. The lead numbers it on merge; the
-- tests of pgmbus.http apply it to their databases until then.

-- ---------------------------------------------------------------------------------------------
-- Scopes of API keys. A scope is 'engine:action:glob':
--   engine  queues | streams | timers
--   action  read (observe) | consume (lease/ack/nack, stream read and commit) | post (post,
--           publish) | write (everything, including create, dmq replay/delete, seek)
--   glob    the queue, topic or group names it covers ('*' any run of characters, '?' one)
-- A client always owns its own timers callbacks; 'timers:read:*' lets it see every client's
-- (the dashboard's timers page). Keys made before scopes existed keep only their own timers.
-- ---------------------------------------------------------------------------------------------

-- api_scopes_valid(scopes): true when every element is a well-formed scope.
CREATE FUNCTION mbus.api_scopes_valid(p_scopes text[])
RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT cardinality(p_scopes) <= 100 AND NOT EXISTS (
        SELECT 1 FROM unnest(p_scopes) AS s(scope)
        WHERE s.scope IS NULL
           OR s.scope !~ '^(queues|streams|timers):(read|consume|post|write):[^[:space:],]{1,200}$');
$$;

ALTER TABLE mbus.timer_clients
    ADD COLUMN scopes text[] NOT NULL DEFAULT '{}'
    CONSTRAINT timer_clients_scopes_valid CHECK (mbus.api_scopes_valid(scopes));

COMMENT ON COLUMN mbus.timer_clients.scopes IS
    'What the API key may do beyond its own timers: engine:action:glob (see mbus.api_scopes_valid).';

-- api_authenticate(api_key): the client owning the key with its name and scopes (no row: none).
CREATE FUNCTION mbus.api_authenticate(p_api_key text,
    OUT client_id bigint, OUT name text, OUT scopes text[])
RETURNS SETOF record
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT c.id, c.name, c.scopes FROM mbus.timer_clients AS c
    WHERE c.key_hash = sha256(convert_to(p_api_key, 'UTF8'));
$$;

-- api_set_scopes(name, scopes): replace a client's scopes; MB002 for an unknown client, MB006
-- for a malformed scope. Returns the scopes stored (sorted, without duplicates).
CREATE FUNCTION mbus.api_set_scopes(p_name text, p_scopes text[])
RETURNS text[]
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_scopes text[] := ARRAY(SELECT DISTINCT s FROM unnest(coalesce(p_scopes, '{}')) AS s
                             ORDER BY s);
BEGIN
    IF NOT mbus.api_scopes_valid(v_scopes) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid scopes %L', p_scopes),
            HINT = 'a scope is engine:action:glob, engine queues|streams|timers, '
                   'action read|consume|post|write, e.g. queues:post:orders_*';
    END IF;
    UPDATE mbus.timer_clients AS c SET scopes = v_scopes WHERE c.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('timer client %L does not exist', p_name);
    END IF;
    RETURN v_scopes;
END;
$$;

-- ---------------------------------------------------------------------------------------------
-- HTTP stream leases. An HTTP client cannot keep a transaction open between requests, so a read
-- over HTTP leases the group's (slot's) next batch instead: http_read returns the events and a
-- token; http_commit(token) moves the group exactly as far as that batch, once, if the lease is
-- still live and nobody moved the group meanwhile (seek). While the lease lives, other HTTP
-- readers of the slot get MB008; when it ends uncommitted, the next read returns the same
-- events again. HTTP readers therefore get every event at least once.
-- ---------------------------------------------------------------------------------------------
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

-- http_read(group, max_events, slot, lease, client_id, now): lease the next batch of the group
-- (slot). Returns its rows with the lease token and end; no rows when the group has caught up.
-- MB008 while another lease of the slot is live.
CREATE FUNCTION mbus.http_read(p_group text, p_max_events integer, p_slot integer,
                               p_lease interval, p_client_id bigint DEFAULT NULL,
                               p_now timestamptz DEFAULT NULL)
RETURNS TABLE (token uuid, lease_until timestamptz, cursor text, id bigint, topic text,
               key text, payload jsonb, headers jsonb, published_at timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    g       mbus.stream_groups;
    l       mbus.http_stream_leases;
    v_slot  integer;
    v_now   timestamptz := coalesce(p_now, clock_timestamp());
    v_from  text;
    v_token uuid := gen_random_uuid();
    v_until timestamptz;
BEGIN
    IF p_lease IS NULL OR p_lease <= interval '0' OR p_lease > interval '1 hour' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease must be more than 0 and at most 1 hour, not %s', p_lease);
    END IF;
    g := mbus._group(p_group);
    v_slot := mbus._slot_of(g, p_slot);
    v_until := v_now + p_lease;
    PERFORM pg_advisory_xact_lock(mbus._reader_lock_key(g.name, v_slot));
    SELECT * INTO l FROM mbus.http_stream_leases AS hl
    WHERE hl.group_name = g.name AND hl.slot = v_slot FOR UPDATE;
    IF FOUND AND l.lease_until > v_now THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('consumer group %L slot %s is leased by another HTTP reader until %s',
                             g.name, v_slot, l.lease_until),
            HINT = 'commit or let the lease end; each slot has one HTTP reader at a time';
    END IF;
    DELETE FROM mbus.http_stream_leases AS hl WHERE hl.group_name = g.name AND hl.slot = v_slot;
    v_from := mbus.group_cursor(g.name, CASE WHEN g.slots > 1 THEN v_slot END);
    RETURN QUERY
    WITH b AS MATERIALIZED (
        SELECT * FROM mbus.read_next(g.name, p_max_events, CASE WHEN g.slots > 1 THEN v_slot END)
                      WITH ORDINALITY AS r(cursor, id, topic, key, payload, headers,
                                           published_at, n)
    ), leased AS (
        INSERT INTO mbus.http_stream_leases AS hl
            (group_name, slot, token, from_cursor, to_cursor, events, client_id, leased_at,
             lease_until)
        SELECT g.name, v_slot, v_token, v_from, min(b.cursor), count(*), p_client_id, v_now,
               v_until
        FROM b HAVING count(*) > 0
        RETURNING hl.token
    )
    SELECT v_token, v_until, b.cursor, b.id, b.topic, b.key, b.payload, b.headers,
           b.published_at
    FROM b ORDER BY b.n;
END;
$$;

-- http_commit(group, token, now): acknowledge a leased batch: the group moves to the batch's
-- cursor. MB007 when the lease is unknown (or another group's), ended, or the group moved since
-- the read (its events are delivered again, or were skipped by a seek). Returns the new cursor.
CREATE FUNCTION mbus.http_commit(p_group text, p_token uuid, p_now timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    l     mbus.http_stream_leases;
    g     mbus.stream_groups;
    v_now timestamptz := coalesce(p_now, clock_timestamp());
BEGIN
    SELECT * INTO l FROM mbus.http_stream_leases AS hl
    WHERE hl.token = p_token AND hl.group_name = p_group FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('stream lease %s is unknown or was committed already', p_token);
    END IF;
    DELETE FROM mbus.http_stream_leases AS hl WHERE hl.token = p_token;
    IF l.lease_until <= v_now THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('stream lease %s ended at %s: its events will be read again',
                             p_token, l.lease_until);
    END IF;
    g := mbus._group(l.group_name);
    IF mbus.group_cursor(g.name, CASE WHEN g.slots > 1 THEN l.slot END) <> l.from_cursor THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('consumer group %L moved since lease %s was taken (seek)',
                             g.name, p_token);
    END IF;
    PERFORM mbus.commit(g.name, l.to_cursor);
    RETURN l.to_cursor;
END;
$$;

-- http_extend(group, token, lease, now): make a live lease of the group end lease from now;
-- MB007 when it is unknown, committed or ended.
CREATE FUNCTION mbus.http_extend(p_group text, p_token uuid, p_lease interval,
                                 p_now timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now   timestamptz := coalesce(p_now, clock_timestamp());
    v_until timestamptz;
BEGIN
    IF p_lease IS NULL OR p_lease <= interval '0' OR p_lease > interval '1 hour' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease must be more than 0 and at most 1 hour, not %s', p_lease);
    END IF;
    UPDATE mbus.http_stream_leases AS hl SET lease_until = v_now + p_lease
    WHERE hl.token = p_token AND hl.group_name = p_group AND hl.lease_until > v_now
    RETURNING hl.lease_until INTO v_until;
    IF v_until IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('stream lease %s is unknown, committed or ended', p_token);
    END IF;
    RETURN v_until;
END;
$$;

-- The timers' recent-calls metrics (calls by outcome, lateness) read a window of attempts.
CREATE INDEX timer_attempts_started ON mbus.timer_attempts (started_at);

-- PUBLIC may execute none of these (see 0001's restrict_public_execute).
SELECT mbus.restrict_public_execute();
