-- 0002 streams: the partitioned event log, consumer groups with snapshot cursors, retries and
-- dead letters, subscriptions, change capture and restore detection.
--
-- The one rule everything here rests on (PgQ's): every event stores the top-level id of the
-- transaction that published it, pg_current_xact_id() (never xmin, which is a subtransaction's
-- id after a SAVEPOINT). A group's position is a pg_snapshot: the events it has consumed are
-- exactly those whose transaction is visible in that snapshot. A batch is the events whose
-- transaction is visible in a newer snapshot and not in the old one. Transactions that commit
-- out of id order are therefore never skipped, rolled-back events never appear (their rows are
-- never visible), and a transaction held open delays only its own events: it sits in the xip
-- list of every snapshot until it ends, and its events are read by the first batch after.
--
-- Cursors (positions) are text, because they carry 64-bit xid8 values:
--   '<snap>'                              every event visible in <snap> is consumed;
--   '<lo>;<hi>;<after_txid>;<after_id>'   every event visible in <lo> is consumed, and of the
--                                         events visible in <hi> but not in <lo>, those up to
--                                         (after_txid, after_id) in (txid, id) order;
--   '<slot>@<position>'                   the same, for one slot of a slotted group.
-- A batch larger than max_events is thus read in pieces, each one committed on its own.

---------------------------------------------------------------------------------------------
-- The log
---------------------------------------------------------------------------------------------

-- Event ids come from one sequence (strictly increasing in allocation order, so time-ordered).
-- Partition k holds ids [k * 2^40, (k + 1) * 2^40); mbus.maintain() rolls the sequence forward
-- to the next partition when the partition interval has passed.
CREATE SEQUENCE mbus.event_seq AS bigint MINVALUE 1 START WITH 1099511627776 CACHE 1;

CREATE TABLE mbus.events (
    id           bigint      NOT NULL DEFAULT nextval('mbus.event_seq'),
    topic        text        NOT NULL,
    key          text,
    payload      jsonb       NOT NULL,
    headers      jsonb,
    published_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    txid         xid8        NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT events_topic_ok CHECK (topic <> '' AND octet_length(topic) <= 200),
    CONSTRAINT events_headers_ok CHECK (headers IS NULL OR jsonb_typeof(headers) = 'object'),
    PRIMARY KEY (id)
) PARTITION BY RANGE (id);

COMMENT ON TABLE mbus.events IS
    'The stream log: insert-only, range-partitioned by id; txid is the publishing transaction.';

-- The batch scans read (txid, id) ranges in order.
CREATE INDEX events_txid_id ON mbus.events (txid, id);

CREATE TABLE mbus.event_partitions (
    partition_no integer     PRIMARY KEY CHECK (partition_no > 0),
    name         text        NOT NULL UNIQUE,
    lo_id        bigint      NOT NULL,
    hi_id        bigint      NOT NULL,
    opened_at    timestamptz,
    closed_at    timestamptz,
    CHECK (hi_id > lo_id),
    CHECK (closed_at IS NULL OR opened_at IS NOT NULL)
);

COMMENT ON TABLE mbus.event_partitions IS
    'Partitions of mbus.events: id range, when ids started (opened_at) and stopped going there.';

INSERT INTO mbus.settings (key, value, description) VALUES
    ('streams.partition_interval', '"1 day"',
     'how long ids go to one partition of mbus.events before maintain() starts the next'),
    ('streams.partitions_ahead', '2', 'empty partitions maintain() keeps ready ahead'),
    ('streams.retention', '"7 days"',
     'a closed partition is dropped this long after it closed, unless a live group needs it');

-- Counters of noteworthy events (exported as metrics by the Python side).
CREATE TABLE mbus.stream_counters (
    name  text   PRIMARY KEY,
    value bigint NOT NULL DEFAULT 0
);

CREATE FUNCTION mbus._count(p_name text, p_by bigint DEFAULT 1)
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog
AS $$
    INSERT INTO mbus.stream_counters AS c (name, value) VALUES (p_name, p_by)
    ON CONFLICT (name) DO UPDATE SET value = c.value + excluded.value;
$$;

---------------------------------------------------------------------------------------------
-- Restore detection: stored transaction ids belong to the cluster that wrote them.
---------------------------------------------------------------------------------------------
CREATE TABLE mbus.stream_state (
    singleton         boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    system_identifier bigint      NOT NULL,
    installed_at      timestamptz NOT NULL DEFAULT now(),
    repaired_at       timestamptz
);

-- _system_identifier(): this cluster's identity (pg_control_system needs more than PUBLIC has).
CREATE FUNCTION mbus._system_identifier()
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$ SELECT system_identifier FROM pg_control_system() $$;

INSERT INTO mbus.stream_state (system_identifier) SELECT mbus._system_identifier();

-- _check_log(): raise MB009 unless the log's transaction ids are this cluster's. The answer
-- is cached for the session (a restore always comes with new sessions).
CREATE FUNCTION mbus._check_log()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_stored bigint;
    v_here   bigint;
BEGIN
    IF current_setting('mbus.streams_log_ok', true) = 'yes' THEN
        RETURN;
    END IF;
    SELECT s.system_identifier INTO v_stored FROM mbus.stream_state AS s;
    v_here := mbus._system_identifier();
    IF v_stored IS DISTINCT FROM v_here THEN
        RAISE EXCEPTION USING ERRCODE = 'MB009',
            MESSAGE = 'the stream log''s transaction ids belong to another cluster',
            DETAIL = format('stored for cluster %s, this is cluster %s (the database was '
                            'restored with pg_dump/pg_restore or copied)', v_stored, v_here),
            HINT = 'run `pgmbus streams repair-after-restore` (mbus.repair_after_restore())';
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.stream_cursors AS c
               WHERE pg_snapshot_xmax(coalesce(c.hi, c.lo))
                     > pg_snapshot_xmax(pg_current_snapshot())) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB009',
            MESSAGE = 'a consumer group''s cursor holds transaction ids from the future',
            HINT = 'run `pgmbus streams repair-after-restore` (mbus.repair_after_restore())';
    END IF;
    PERFORM set_config('mbus.streams_log_ok', 'yes', false);
END;
$$;

---------------------------------------------------------------------------------------------
-- Snapshots and positions
---------------------------------------------------------------------------------------------
CREATE TYPE mbus.stream_position AS (
    lo         pg_snapshot,
    hi         pg_snapshot,
    after_txid xid8,
    after_id   bigint
);

-- _snapshot_now(): the current snapshot, except that our own transaction (when it has an id)
-- counts as in progress: PostgreSQL leaves it out of xip, which would make events we publish
-- after reading look consumed already.
CREATE FUNCTION mbus._snapshot_now()
RETURNS pg_snapshot
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    s  pg_snapshot := pg_current_snapshot();
    me xid8 := pg_current_xact_id_if_assigned();
BEGIN
    IF me IS NULL OR NOT pg_visible_in_snapshot(me, s) THEN
        RETURN s;
    END IF;
    RETURN (least(pg_snapshot_xmin(s), me)::text || ':' || pg_snapshot_xmax(s)::text || ':'
            || (SELECT string_agg(x::text, ',' ORDER BY x)
                FROM (SELECT pg_snapshot_xip(s) AS x UNION SELECT me) AS u))::pg_snapshot;
END;
$$;

-- _snapshot_cut(s, cutoff): the snapshot that sees what s sees below cutoff and nothing from
-- cutoff on (cutoff <= xmax(s)). Used to position a group at a time or an event id.
CREATE FUNCTION mbus._snapshot_cut(s pg_snapshot, cutoff xid8)
RETURNS pg_snapshot
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cut xid8 := least(cutoff, pg_snapshot_xmax(s));
    v_xip xid8[];
BEGIN
    v_xip := ARRAY(SELECT x FROM pg_snapshot_xip(s) AS x WHERE x < v_cut ORDER BY x);
    RETURN (coalesce(v_xip[1], v_cut)::text || ':' || v_cut::text || ':'
            || array_to_string(v_xip, ','))::pg_snapshot;
END;
$$;

-- _snap_contains(a, b): every transaction visible in b is visible in a.
CREATE FUNCTION mbus._snap_contains(a pg_snapshot, b pg_snapshot)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_snapshot_xmax(b) <= pg_snapshot_xmax(a)
       AND NOT EXISTS (SELECT 1 FROM pg_snapshot_xip(a) AS x
                       WHERE x < pg_snapshot_xmax(b) AND pg_visible_in_snapshot(x, b));
$$;

CREATE FUNCTION mbus._format_position(p mbus.stream_position, p_slot integer DEFAULT NULL)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE WHEN p_slot IS NULL THEN '' ELSE p_slot::text || '@' END
        || CASE WHEN (p).hi IS NULL THEN (p).lo::text
                ELSE concat_ws(';', (p).lo, (p).hi, (p).after_txid, (p).after_id) END;
$$;

-- _parse_position(text) -> (slot, position). Raises MB006 on anything malformed.
CREATE FUNCTION mbus._parse_position(p_text text, OUT slot integer, OUT pos mbus.stream_position)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_parts text[];
    v_body  text := p_text;
BEGIN
    IF p_text IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'cursor must not be null';
    END IF;
    IF v_body ~ '^[0-9]+@' THEN
        slot := split_part(v_body, '@', 1)::integer;
        v_body := substr(v_body, position('@' IN v_body) + 1);
    END IF;
    v_parts := string_to_array(v_body, ';');
    BEGIN
        IF cardinality(v_parts) = 1 THEN
            pos := ROW(v_parts[1]::pg_snapshot, NULL, NULL, NULL)::mbus.stream_position;
        ELSIF cardinality(v_parts) = 4 THEN
            pos := ROW(v_parts[1]::pg_snapshot, v_parts[2]::pg_snapshot, v_parts[3]::xid8,
                       v_parts[4]::bigint)::mbus.stream_position;
        ELSE
            RAISE EXCEPTION 'wrong number of parts';
        END IF;
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('malformed stream cursor %L', p_text),
            HINT = 'use a cursor returned by mbus.read_next, current_cursor or group_cursor';
    END;
    IF pos.hi IS NOT NULL AND NOT mbus._snap_contains(pos.hi, pos.lo) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('malformed stream cursor %L (its target is behind its start)', p_text);
    END IF;
END;
$$;

-- _consumed(txid, id, position): whether the event is consumed at that position.
CREATE FUNCTION mbus._consumed(p_txid xid8, p_id bigint, p mbus.stream_position)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT pg_visible_in_snapshot(p_txid, (p).lo)
        OR ((p).hi IS NOT NULL AND pg_visible_in_snapshot(p_txid, (p).hi)
            AND (p_txid, p_id) <= ((p).after_txid, (p).after_id));
$$;

-- _position_le(a, b): everything consumed at a is consumed at b (conservative: may say no).
CREATE FUNCTION mbus._position_le(a mbus.stream_position, b mbus.stream_position)
RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT CASE
        WHEN mbus._snap_contains((b).lo, coalesce((a).hi, (a).lo)) THEN true
        WHEN (b).hi IS NULL THEN false
        WHEN (a).hi IS NULL THEN mbus._snap_contains((b).lo, (a).lo)
        ELSE (a).lo::text = (b).lo::text AND (a).hi::text = (b).hi::text
             AND ((a).after_txid, (a).after_id) <= ((b).after_txid, (b).after_id)
    END;
$$;

-- key_slot(key, id, nslots): the slot of an event in a group split by key hash. Events
-- without a key are spread by id.
CREATE FUNCTION mbus.key_slot(p_key text, p_id bigint, nslots integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ((hashtextextended(coalesce(p_key, p_id::text), 0) & 9223372036854775807)
            % nslots)::integer;
$$;

-- current_cursor(): the position a reader would reach now (a snapshot, as text).
CREATE FUNCTION mbus.current_cursor()
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus._check_log();
    RETURN mbus._snapshot_now()::text;
END;
$$;

---------------------------------------------------------------------------------------------
-- Publishing
---------------------------------------------------------------------------------------------
-- The hot-path functions (publish, publish_batch, notify, _batch, and the small SQL helpers
-- _consumed, key_slot, _format_position, _snap_contains, _position_le) carry no SET
-- search_path: a function-level SET costs about a third of a single publish's time and keeps
-- SQL functions from being inlined (they are then planned again at every call). They are not
-- SECURITY DEFINER, qualify every object with its schema, and call only pg_catalog
-- functions, which are always searched first.

-- publish(topic, payload, key, headers): append one event in the caller's transaction; it is
-- readable exactly when that transaction commits. Returns the event id.
CREATE FUNCTION mbus.publish(topic text, payload jsonb, key text DEFAULT NULL,
                             headers jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
    v_id bigint;
BEGIN
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes' THEN
        PERFORM mbus._check_log();
    END IF;
    IF topic IS NULL OR topic = '' OR octet_length(topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid topic %L (1 to 200 bytes)', topic);
    END IF;
    IF payload IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'payload must not be null';
    END IF;
    IF headers IS NOT NULL AND jsonb_typeof(headers) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = format('headers must be a JSON object, not %s', jsonb_typeof(headers));
    END IF;
    INSERT INTO mbus.events (topic, key, payload, headers)
    VALUES (publish.topic, publish.key, publish.payload, publish.headers)
    RETURNING events.id INTO v_id;
    -- one notification per transaction is enough (the flag is transaction-local)
    IF current_setting('mbus.streams_notified', true) IS DISTINCT FROM 'yes' THEN
        PERFORM pg_notify('mbus_events', ''), set_config('mbus.streams_notified', 'yes', true);
    END IF;
    RETURN v_id;
END;
$$;

-- publish_batch(topic, payloads, keys, headers): append one event per payload (keys and
-- headers, when given, are parallel arrays). Returns the ids in array order.
CREATE FUNCTION mbus.publish_batch(topic text, payloads jsonb[], keys text[] DEFAULT NULL,
                                   headers jsonb[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM mbus._check_log();
    PERFORM pg_notify('mbus_events', '');
    IF topic IS NULL OR topic = '' OR octet_length(topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('invalid topic %L (1 to 200 bytes)', topic);
    END IF;
    IF (keys IS NOT NULL AND cardinality(keys) <> cardinality(payloads))
       OR (headers IS NOT NULL AND cardinality(headers) <> cardinality(payloads)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'keys and headers must have one element per payload';
    END IF;
    IF array_position(payloads, NULL) IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'payloads must not contain null';
    END IF;
    RETURN QUERY
    INSERT INTO mbus.events (topic, key, payload, headers)
    SELECT publish_batch.topic, k.key, p.payload, h.headers
    FROM unnest(payloads) WITH ORDINALITY AS p (payload, n)
    LEFT JOIN unnest(keys) WITH ORDINALITY AS k (key, n) ON k.n = p.n
    LEFT JOIN unnest(headers) WITH ORDINALITY AS h (headers, n) ON h.n = p.n
    ORDER BY p.n
    RETURNING events.id;
END;
$$;

-- Listeners (LISTEN mbus_events) are woken by publish, publish_batch and the capture
-- triggers with an empty notification, which PostgreSQL folds into one per transaction and
-- delivers at commit. Writers that INSERT or COPY into mbus.events directly call
-- mbus.notify() (or let readers find the events at their next poll).
CREATE FUNCTION mbus.notify()
RETURNS void
LANGUAGE sql
AS $$ SELECT pg_notify('mbus_events', '') $$;

---------------------------------------------------------------------------------------------
-- Consumer groups
---------------------------------------------------------------------------------------------
CREATE TABLE mbus.stream_groups (
    name          text        PRIMARY KEY,
    slots         integer     NOT NULL DEFAULT 1 CHECK (slots BETWEEN 1 AND 256),
    topics        text[],
    on_busy       text        NOT NULL DEFAULT 'wait' CHECK (on_busy IN ('wait', 'skip')),
    max_lag       interval    CHECK (max_lag > interval '0'),
    ordered       boolean     NOT NULL DEFAULT false,
    max_attempts  integer     NOT NULL DEFAULT 5 CHECK (max_attempts >= 1),
    retry_backoff interval    NOT NULL DEFAULT '10 seconds' CHECK (retry_backoff >= interval '0'),
    state         text        NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'expired')),
    expired_at    timestamptz,
    expired_why   text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK ((state = 'expired') = (expired_at IS NOT NULL)),
    CHECK (name ~ '^[a-z][a-z0-9_]*$' AND octet_length(name) <= 48)
);

COMMENT ON TABLE mbus.stream_groups IS 'Consumer groups of the stream log and their options.';

CREATE TABLE mbus.stream_cursors (
    group_name   text        NOT NULL REFERENCES mbus.stream_groups ON DELETE CASCADE,
    slot         integer     NOT NULL CHECK (slot >= 0),
    lo           pg_snapshot NOT NULL,
    hi           pg_snapshot,
    after_txid   xid8,
    after_id     bigint,
    lo_taken_at  timestamptz NOT NULL DEFAULT now(),
    committed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (group_name, slot),
    CHECK ((hi IS NULL) = (after_txid IS NULL) AND (hi IS NULL) = (after_id IS NULL))
);

COMMENT ON TABLE mbus.stream_cursors IS
    'Committed position of each group (and slot): see the cursor grammar at the top of 0002.';

-- _start_snapshot(start): the snapshot a group positioned at 'beginning', 'now', a
-- timestamp, or an event id (digits) starts from.
CREATE FUNCTION mbus._start_snapshot(p_start text)
RETURNS pg_snapshot
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now  pg_snapshot := mbus._snapshot_now();
    v_ts   timestamptz;
    v_cut  xid8;
BEGIN
    IF p_start IS NULL OR p_start = 'now' THEN
        RETURN v_now;
    ELSIF p_start = 'beginning' THEN
        RETURN '1:1:'::pg_snapshot;
    ELSIF p_start ~ '^[0-9]+$' THEN
        SELECT min(e.txid) INTO v_cut FROM mbus.events AS e WHERE e.id >= p_start::bigint;
    ELSE
        BEGIN
            v_ts := p_start::timestamptz;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('invalid start %L', p_start),
                HINT = 'use ''beginning'', ''now'', a timestamp or an event id';
        END;
        SELECT min(e.txid) INTO v_cut FROM mbus.events AS e WHERE e.published_at >= v_ts;
    END IF;
    RETURN mbus._snapshot_cut(v_now, coalesce(v_cut, pg_snapshot_xmax(v_now)));
END;
$$;

-- create_group(name, start, slots): a consumer group positioned at start ('beginning', 'now',
-- a timestamp, or an event id). With slots > 1 the group is split by key hash into that many
-- slots, each with its own cursor and reader.
CREATE FUNCTION mbus.create_group(name text, start text DEFAULT 'now', slots integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_snap pg_snapshot;
BEGIN
    PERFORM mbus._check_log();
    PERFORM mbus.check_name('group', create_group.name, 48);
    IF slots IS NULL OR slots < 1 OR slots > 256 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('slots must be between 1 and 256, not %s', slots);
    END IF;
    v_snap := mbus._start_snapshot(start);
    BEGIN
        INSERT INTO mbus.stream_groups (name, slots) VALUES (create_group.name, slots);
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = format('consumer group %L already exists', create_group.name);
    END;
    INSERT INTO mbus.stream_cursors (group_name, slot, lo)
    SELECT create_group.name, s, v_snap FROM generate_series(0, slots - 1) AS s;
END;
$$;

-- drop_group(name): remove a group, its cursors, retries and dead letters.
CREATE FUNCTION mbus.drop_group(name text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.stream_groups AS g WHERE g.name = drop_group.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer group %L does not exist', drop_group.name);
    END IF;
END;
$$;

-- configure_group(name, ...): change a group's options (null leaves one unchanged).
--   topics: only these topics are delivered ('{}' means all); on_busy: 'wait' (a second reader
--   waits for the first one's transaction) or 'skip' (it gets nothing); max_lag: a group with
--   unread events older than this is expired by maintain(); max_attempts and retry_backoff:
--   the retry policy of retry_event(); ordered: deliver a transaction's events only once every
--   transaction that started before it has ended (the Wiki PubSub seed's option of refusing
--   out-of-order events), so batches come in transaction-id order; the price is that an open
--   transaction then holds back everything that started after it (the xmin watermark).
CREATE FUNCTION mbus.configure_group(name text, topics text[] DEFAULT NULL,
                                     on_busy text DEFAULT NULL, max_lag interval DEFAULT NULL,
                                     max_attempts integer DEFAULT NULL,
                                     retry_backoff interval DEFAULT NULL,
                                     ordered boolean DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    IF on_busy IS NOT NULL AND on_busy NOT IN ('wait', 'skip') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('on_busy must be ''wait'' or ''skip'', not %L', on_busy);
    END IF;
    UPDATE mbus.stream_groups AS g
    SET topics = CASE WHEN configure_group.topics IS NULL THEN g.topics
                      WHEN cardinality(configure_group.topics) = 0 THEN NULL
                      ELSE configure_group.topics END,
        on_busy = coalesce(configure_group.on_busy, g.on_busy),
        max_lag = CASE WHEN configure_group.max_lag IS NULL THEN g.max_lag
                       WHEN configure_group.max_lag <= interval '0' THEN NULL
                       ELSE configure_group.max_lag END,
        max_attempts = coalesce(configure_group.max_attempts, g.max_attempts),
        retry_backoff = coalesce(configure_group.retry_backoff, g.retry_backoff),
        ordered = coalesce(configure_group.ordered, g.ordered)
    WHERE g.name = configure_group.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer group %L does not exist', configure_group.name);
    END IF;
END;
$$;

-- _group(name): the group's row; raises MB002 when unknown and MB008 when expired.
CREATE FUNCTION mbus._group(p_name text)
RETURNS mbus.stream_groups
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    g mbus.stream_groups;
BEGIN
    SELECT * INTO g FROM mbus.stream_groups AS sg WHERE sg.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer group %L does not exist', p_name);
    END IF;
    IF g.state = 'expired' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('consumer group %L expired at %s: %s', p_name, g.expired_at,
                             g.expired_why),
            HINT = 'reposition it with mbus.seek(group, start) or drop it';
    END IF;
    RETURN g;
END;
$$;

-- _slot_of(group, slot): validate the slot argument against the group's slot count.
CREATE FUNCTION mbus._slot_of(g mbus.stream_groups, p_slot integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF p_slot IS NULL THEN
        IF g.slots > 1 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('consumer group %L has %s slots: name the slot', g.name,
                                 g.slots);
        END IF;
        RETURN 0;
    END IF;
    IF p_slot < 0 OR p_slot >= g.slots THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('slot %s out of range: group %L has slots 0..%s', p_slot, g.name,
                             g.slots - 1);
    END IF;
    RETURN p_slot;
END;
$$;

CREATE TYPE mbus.stream_key AS (
    txid xid8,
    id   bigint
);

CREATE TYPE mbus.stream_row AS (
    txid         xid8,
    id           bigint,
    topic        text,
    key          text,
    payload      jsonb,
    headers      jsonb,
    published_at timestamptz
);

-- _batch(ended, after_txid, after_id, from, to, hi, topics, slot, nslots, limit): the next
-- events of the batch from a position lo to a snapshot hi, in (txid, id) order, after
-- (after_txid, after_id). A transaction not visible in lo is either in lo's xip list or at or
-- after lo's xmax, so the batch is two index range scans on (txid, id): `ended`, the xip
-- transactions of lo that hi sees ended, and the transactions from `from` (xmax(lo)) up to
-- `to` (xmax(hi)) that hi sees. A long transaction makes the first list one entry longer; it
-- never widens the second scan. An SQL function without SET, so the planner inlines it into
-- read_next's query (no intermediate copies of the rows).
CREATE FUNCTION mbus._batch(p_ended xid8[], p_after_txid xid8, p_after_id bigint, p_from xid8,
                            p_to xid8, p_hi pg_snapshot, p_topics text[], p_slot integer,
                            p_nslots integer, p_limit integer)
RETURNS SETOF mbus.stream_row
LANGUAGE sql STABLE
AS $$
    SELECT b.* FROM (
        (SELECT e.txid, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
         FROM mbus.events AS e
         WHERE e.txid = ANY (p_ended)
           AND (e.txid, e.id) > (p_after_txid, p_after_id)
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
           AND (p_nslots = 1 OR mbus.key_slot(e.key, e.id, p_nslots) = p_slot)
         ORDER BY e.txid, e.id
         LIMIT p_limit)
        UNION ALL
        (SELECT e.txid, e.id, e.topic, e.key, e.payload, e.headers, e.published_at
         FROM mbus.events AS e
         WHERE e.txid >= p_from AND e.txid < p_to
           AND (e.txid, e.id) > (p_after_txid, p_after_id)
           AND pg_visible_in_snapshot(e.txid, p_hi)
           AND (p_topics IS NULL OR e.topic = ANY (p_topics))
           AND (p_nslots = 1 OR mbus.key_slot(e.key, e.id, p_nslots) = p_slot)
         ORDER BY e.txid, e.id
         LIMIT p_limit)
    ) AS b
    ORDER BY b.txid, b.id
    LIMIT p_limit;
$$;

-- _reader_lock_key(group, slot): the advisory lock key of a group's (slot's) reader.
CREATE FUNCTION mbus._reader_lock_key(p_group text, p_slot integer)
RETURNS bigint
LANGUAGE sql IMMUTABLE
AS $$ SELECT hashtextextended('mbus.streams.reader:' || p_group || ':' || p_slot, 0) $$;

-- read_next(group, max_events, slot): the group's next batch (at most max_events events),
-- without moving the group. Every row carries the cursor the group reaches when the batch is
-- committed with commit(group, cursor). The group (slot) stays locked until the caller's
-- transaction ends (a second reader waits, or gets nothing when the group's on_busy is 'skip'),
-- so reading, writing results and committing in one transaction processes each event once.
-- An empty batch moves the group on by itself (there is nothing to acknowledge).
CREATE FUNCTION mbus.read_next("group" text, max_events integer DEFAULT 1000,
                               slot integer DEFAULT NULL)
RETURNS TABLE (cursor text, id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog
-- The batch must be read as an ordered range scan of the (txid, id) index whatever the
-- statistics say: the newest transaction ids are always past the histogram, and a bitmap scan
-- plus sort chosen from a low estimate would read the whole backlog for every batch.
SET enable_bitmapscan = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    g        mbus.stream_groups;
    c        mbus.stream_cursors;
    v_slot   integer;
    v_hi     pg_snapshot;
    v_after_txid xid8;
    v_after_id   bigint;
    v_ended  xid8[];
    v_done   text;
    v_edge   mbus.stream_key[];
    v_n      bigint;
BEGIN
    PERFORM mbus._check_log();
    IF max_events IS NULL OR max_events < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('max_events must be at least 1, not %s', max_events);
    END IF;
    g := mbus._group("group");
    v_slot := mbus._slot_of(g, slot);
    -- The reader's lock (the seed's lock_watermark) is a transaction-level advisory lock, not
    -- a row lock: reading then stays a read-only transaction until the commit.
    IF g.on_busy = 'skip' THEN
        IF NOT pg_try_advisory_xact_lock(mbus._reader_lock_key(g.name, v_slot)) THEN
            RETURN;
        END IF;
    ELSE
        PERFORM pg_advisory_xact_lock(mbus._reader_lock_key(g.name, v_slot));
    END IF;
    SELECT * INTO c FROM mbus.stream_cursors AS sc
    WHERE sc.group_name = g.name AND sc.slot = v_slot;
    v_hi := c.hi;
    IF v_hi IS NULL THEN
        v_hi := mbus._snapshot_now();
        IF g.ordered THEN
            -- only transactions below the oldest one still running (never behind lo)
            v_hi := mbus._snapshot_cut(v_hi, greatest(pg_snapshot_xmin(v_hi),
                                                      pg_snapshot_xmax(c.lo)));
        END IF;
    END IF;
    v_after_txid := coalesce(c.after_txid, '0'::xid8);
    v_after_id := coalesce(c.after_id, -1);
    v_ended := ARRAY(SELECT x FROM pg_snapshot_xip(c.lo) AS x
                     WHERE pg_visible_in_snapshot(x, v_hi) AND x >= v_after_txid);
    -- Where the batch ends: the keys of its rows max_events and max_events + 1 (a second row
    -- means there is more, and the cursor stops inside the batch). Both scans see the same
    -- rows: they belong to transactions that hi sees as ended.
    SELECT array_agg(ROW(k.txid, k.id)::mbus.stream_key ORDER BY k.txid, k.id) INTO v_edge
    FROM (SELECT b.txid, b.id
          FROM mbus._batch(v_ended, v_after_txid, v_after_id,
                           greatest(pg_snapshot_xmax(c.lo), v_after_txid),
                           pg_snapshot_xmax(v_hi), v_hi, g.topics, v_slot, g.slots,
                           max_events + 1) AS b
          ORDER BY b.txid, b.id
          OFFSET max_events - 1) AS k;
    v_done := mbus._format_position(
        CASE WHEN cardinality(v_edge) = 2
             THEN ROW(c.lo, v_hi, (v_edge[1]).txid, (v_edge[1]).id)::mbus.stream_position
             ELSE ROW(v_hi, NULL, NULL, NULL)::mbus.stream_position END,
        CASE WHEN g.slots > 1 THEN v_slot END);
    RETURN QUERY
    SELECT v_done, b.id, b.topic, b.key, b.payload, b.headers, b.published_at
    FROM mbus._batch(v_ended, v_after_txid, v_after_id,
                     greatest(pg_snapshot_xmax(c.lo), v_after_txid),
                     pg_snapshot_xmax(v_hi), v_hi, g.topics, v_slot, g.slots, max_events) AS b
    ORDER BY b.txid, b.id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n = 0 AND (c.hi IS NOT NULL OR c.lo::text <> v_hi::text) THEN
        -- an empty batch: nothing to acknowledge, the group moves on by itself
        UPDATE mbus.stream_cursors AS sc
        SET lo = v_hi, hi = NULL, after_txid = NULL, after_id = NULL,
            lo_taken_at = now(), committed_at = now()
        WHERE sc.group_name = g.name AND sc.slot = v_slot;
    END IF;
END;
$$;

-- commit(group, cursor): move the group (or the cursor's slot) to cursor. A cursor behind the
-- group's position is refused (MB006): replays go through seek(). Committing the same cursor
-- twice is harmless.
CREATE FUNCTION mbus.commit("group" text, cursor text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    g      mbus.stream_groups;
    c      mbus.stream_cursors;
    v_in   record;
    v_slot integer;
    v_cur  mbus.stream_position;
BEGIN
    PERFORM mbus._check_log();
    g := mbus._group("group");
    v_in := mbus._parse_position(cursor);
    v_slot := mbus._slot_of(g, v_in.slot);
    SELECT * INTO c FROM mbus.stream_cursors AS sc
    WHERE sc.group_name = g.name AND sc.slot = v_slot
    FOR UPDATE;
    v_cur := ROW(c.lo, c.hi, c.after_txid, c.after_id);
    IF mbus._format_position(v_cur) = mbus._format_position(v_in.pos) THEN
        RETURN;
    END IF;
    IF NOT mbus._position_le(v_cur, v_in.pos) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('cursor %L is behind consumer group %L''s position %L', cursor,
                             g.name, mbus._format_position(v_cur)),
            HINT = 'another reader committed first; to replay events use mbus.seek()';
    END IF;
    IF NOT mbus._snap_contains(pg_current_snapshot(),
                               coalesce((v_in.pos).hi, (v_in.pos).lo)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('cursor %L is ahead of this database''s transactions', cursor);
    END IF;
    UPDATE mbus.stream_cursors AS sc
    SET lo = (v_in.pos).lo, hi = (v_in.pos).hi, after_txid = (v_in.pos).after_txid,
        after_id = (v_in.pos).after_id, committed_at = now(),
        lo_taken_at = CASE WHEN (v_in.pos).lo::text = c.lo::text THEN c.lo_taken_at
                           ELSE now() END
    WHERE sc.group_name = g.name AND sc.slot = v_slot;
END;
$$;

-- group_cursor(group, slot): the group's committed position (text).
CREATE FUNCTION mbus.group_cursor("group" text, slot integer DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    g      mbus.stream_groups;
    c      mbus.stream_cursors;
    v_slot integer;
BEGIN
    PERFORM mbus._check_log();
    g := mbus._group("group");
    v_slot := mbus._slot_of(g, slot);
    SELECT * INTO c FROM mbus.stream_cursors AS sc
    WHERE sc.group_name = g.name AND sc.slot = v_slot;
    RETURN mbus._format_position(ROW(c.lo, c.hi, c.after_txid, c.after_id),
                                 CASE WHEN slot IS NOT NULL AND g.slots > 1 THEN v_slot END);
END;
$$;

-- read_between(from_cursor, to_cursor, topics, slot, nslots): the events consumed at
-- to_cursor and not at from_cursor, optionally only these topics and this key-hash slot of
-- nslots, in id order. A pure function of its arguments while the events are retained.
CREATE FUNCTION mbus.read_between(from_cursor text, to_cursor text, topics text[] DEFAULT NULL,
                                  slot integer DEFAULT NULL, nslots integer DEFAULT NULL)
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
-- an index scan of the (txid, id) ranges whatever the (always stale at the head) statistics say
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_from mbus.stream_position;
    v_to   mbus.stream_position;
    v_xip  xid8[];
    v_xmax xid8;
    v_top  xid8;
BEGIN
    PERFORM mbus._check_log();
    IF (slot IS NULL) <> (nslots IS NULL) OR nslots < 1 OR slot < 0 OR slot >= nslots THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('slot %s of nslots %s is not a valid slot', slot, nslots);
    END IF;
    v_from := (mbus._parse_position(from_cursor)).pos;
    v_to := (mbus._parse_position(to_cursor)).pos;
    v_xip := ARRAY(SELECT pg_snapshot_xip(v_from.lo));
    v_xmax := pg_snapshot_xmax(v_from.lo);
    v_top := pg_snapshot_xmax(coalesce(v_to.hi, v_to.lo));
    RETURN QUERY
    SELECT e.id, e.topic, e.key, e.payload, e.headers, e.published_at
    FROM mbus.events AS e
    WHERE (e.txid = ANY (v_xip) OR (e.txid >= v_xmax AND e.txid < v_top))
      AND mbus._consumed(e.txid, e.id, v_to)
      AND NOT mbus._consumed(e.txid, e.id, v_from)
      AND (topics IS NULL OR e.topic = ANY (topics))
      AND (nslots IS NULL OR mbus.key_slot(e.key, e.id, nslots) = slot)
    ORDER BY e.id;
END;
$$;

-- seek(group, start): reposition every slot of a group ('beginning', 'now', a timestamp or
-- an event id: every event published at or after it is read again). Revives an expired group.
-- Events of transactions that began before the target may be read too (the cursor is a
-- snapshot, so it cuts between transactions, never inside one).
CREATE FUNCTION mbus.seek("group" text, start text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_snap pg_snapshot;
BEGIN
    PERFORM mbus._check_log();
    PERFORM 1 FROM mbus.stream_groups AS g WHERE g.name = "group" FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer group %L does not exist', "group");
    END IF;
    v_snap := mbus._start_snapshot(start);
    UPDATE mbus.stream_cursors AS sc
    SET lo = v_snap, hi = NULL, after_txid = NULL, after_id = NULL, lo_taken_at = now(),
        committed_at = now()
    WHERE sc.group_name = "group";
    UPDATE mbus.stream_groups AS g
    SET state = 'active', expired_at = NULL, expired_why = NULL
    WHERE g.name = "group";
END;
$$;

---------------------------------------------------------------------------------------------
-- Retries and dead letters: one bad event does not stop the stream
---------------------------------------------------------------------------------------------
-- A consumer that fails on one event hands it to retry_event() (in the same transaction as its
-- commit) and goes on with the batch; the event comes back through read_retries() after a
-- backoff, and after max_attempts it goes to the dead letters. Rows keep a copy of the event,
-- so retention never needs to keep a partition for them.
CREATE TABLE mbus.stream_retries (
    group_name   text        NOT NULL REFERENCES mbus.stream_groups ON DELETE CASCADE,
    event_id     bigint      NOT NULL,
    topic        text        NOT NULL,
    key          text,
    payload      jsonb       NOT NULL,
    headers      jsonb,
    published_at timestamptz NOT NULL,
    attempts     integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_at      timestamptz NOT NULL,
    last_error   text,
    PRIMARY KEY (group_name, event_id)
);

CREATE INDEX stream_retries_due ON mbus.stream_retries (group_name, next_at);

CREATE TABLE mbus.stream_dead_letters (
    group_name   text        NOT NULL REFERENCES mbus.stream_groups ON DELETE CASCADE,
    event_id     bigint      NOT NULL,
    topic        text        NOT NULL,
    key          text,
    payload      jsonb       NOT NULL,
    headers      jsonb,
    published_at timestamptz NOT NULL,
    attempts     integer     NOT NULL,
    last_error   text,
    dead_at      timestamptz NOT NULL,
    PRIMARY KEY (group_name, event_id)
);

-- retry_event(group, event_id, error, delay): count a failed attempt at an event; schedule it
-- again after delay (default: the group's retry_backoff doubled per attempt) or, once the
-- group's max_attempts are spent, move it to the dead letters. Returns 'retry' or 'dead'.
CREATE FUNCTION mbus.retry_event("group" text, event_id bigint, error text DEFAULT NULL,
                                 delay interval DEFAULT NULL, p_now timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    g     mbus.stream_groups;
    r     mbus.stream_retries;
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    g := mbus._group("group");
    SELECT * INTO r FROM mbus.stream_retries AS sr
    WHERE sr.group_name = g.name AND sr.event_id = retry_event.event_id
    FOR UPDATE;
    IF NOT FOUND THEN
        SELECT g.name, e.id, e.topic, e.key, e.payload, e.headers, e.published_at, 0, v_now,
               NULL
        INTO r
        FROM mbus.events AS e WHERE e.id = retry_event.event_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'MB002',
                MESSAGE = format('event %s does not exist (or is past retention)', event_id);
        END IF;
        INSERT INTO mbus.stream_retries VALUES (r.*);
    END IF;
    r.attempts := r.attempts + 1;
    IF r.attempts >= g.max_attempts THEN
        DELETE FROM mbus.stream_retries AS sr
        WHERE sr.group_name = g.name AND sr.event_id = r.event_id;
        INSERT INTO mbus.stream_dead_letters (group_name, event_id, topic, key, payload,
                                              headers, published_at, attempts, last_error,
                                              dead_at)
        VALUES (g.name, r.event_id, r.topic, r.key, r.payload, r.headers, r.published_at,
                r.attempts, error, v_now)
        ON CONFLICT ON CONSTRAINT stream_dead_letters_pkey DO UPDATE
        SET attempts = excluded.attempts, last_error = excluded.last_error,
            dead_at = excluded.dead_at;
        PERFORM mbus._count('dead_letters');
        RETURN 'dead';
    END IF;
    UPDATE mbus.stream_retries AS sr
    SET attempts = r.attempts, last_error = error,
        next_at = v_now + coalesce(delay, least(g.retry_backoff * power(2, r.attempts - 1),
                                                interval '1 hour'))
    WHERE sr.group_name = g.name AND sr.event_id = r.event_id;
    RETURN 'retry';
END;
$$;

-- read_retries(group, max_events, lease): claim events whose retry is due. Each is hidden for
-- lease (so a crashed handler's claim comes back); finish it with ack_retry() or
-- retry_event().
CREATE FUNCTION mbus.read_retries("group" text, max_events integer DEFAULT 100,
                                  lease interval DEFAULT '1 minute',
                                  p_now timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz, attempts integer, last_error text)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    PERFORM mbus._group("group");
    RETURN QUERY
    WITH due AS (
        SELECT r.group_name, r.event_id FROM mbus.stream_retries AS r
        WHERE r.group_name = "group" AND r.next_at <= v_now
        ORDER BY r.next_at, r.event_id
        LIMIT max_events
        FOR UPDATE SKIP LOCKED
    )
    UPDATE mbus.stream_retries AS r SET next_at = v_now + lease
    FROM due
    WHERE r.group_name = due.group_name AND r.event_id = due.event_id
    RETURNING r.event_id, r.topic, r.key, r.payload, r.headers, r.published_at, r.attempts,
              r.last_error;
END;
$$;

-- ack_retry(group, event_id): a retried event was handled; forget it.
CREATE FUNCTION mbus.ack_retry("group" text, event_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.stream_retries AS r
    WHERE r.group_name = "group" AND r.event_id = ack_retry.event_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('event %s has no pending retry in group %L', event_id, "group");
    END IF;
END;
$$;

-- replay_dead_letter(group, event_id): give a dead event a fresh set of attempts, now.
CREATE FUNCTION mbus.replay_dead_letter("group" text, event_id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    WITH d AS (
        DELETE FROM mbus.stream_dead_letters AS d
        WHERE d.group_name = "group" AND d.event_id = replay_dead_letter.event_id
        RETURNING d.*
    )
    INSERT INTO mbus.stream_retries (group_name, event_id, topic, key, payload, headers,
                                     published_at, attempts, next_at, last_error)
    SELECT d.group_name, d.event_id, d.topic, d.key, d.payload, d.headers, d.published_at, 0,
           now(), d.last_error
    FROM d;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('event %s is not a dead letter of group %L', event_id, "group");
    END IF;
END;
$$;

-- group_status(): one row per group and slot: state, position, and how much is unread.
CREATE FUNCTION mbus.group_status()
RETURNS TABLE (group_name text, slot integer, state text, group_position text,
               committed_at timestamptz, pending_events bigint,
               oldest_pending_at timestamptz, retries bigint, dead_letters bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT g.name, c.slot, g.state,
           mbus._format_position(ROW(c.lo, c.hi, c.after_txid, c.after_id)), c.committed_at,
           p.n, p.oldest,
           (SELECT count(*) FROM mbus.stream_retries AS r WHERE r.group_name = g.name),
           (SELECT count(*) FROM mbus.stream_dead_letters AS d WHERE d.group_name = g.name)
    FROM mbus.stream_groups AS g
    JOIN mbus.stream_cursors AS c ON c.group_name = g.name
    CROSS JOIN LATERAL (
        SELECT count(*) AS n, min(e.published_at) AS oldest
        FROM mbus.events AS e
        WHERE (e.txid = ANY (ARRAY(SELECT pg_snapshot_xip(c.lo))) OR
               e.txid >= pg_snapshot_xmax(c.lo))
          AND NOT mbus._consumed(e.txid, e.id, ROW(c.lo, c.hi, c.after_txid, c.after_id))
          AND pg_visible_in_snapshot(e.txid, pg_current_snapshot())
          AND (g.topics IS NULL OR e.topic = ANY (g.topics))
          AND (g.slots = 1 OR mbus.key_slot(e.key, e.id, g.slots) = c.slot)
    ) AS p
    ORDER BY g.name, c.slot;
$$;

---------------------------------------------------------------------------------------------
-- Maintenance: partitions ahead, retention, lagging groups, expired subscriptions
---------------------------------------------------------------------------------------------

-- _ensure_partition(n): create partition n of mbus.events (ids [n * 2^40, (n + 1) * 2^40)).
-- Partitions are insert-only, so insert-driven autovacuum is off (analyze still runs).
CREATE FUNCTION mbus._ensure_partition(p_no integer)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_name text := format('events_%s', lpad(p_no::text, 7, '0'));
    v_lo bigint := p_no::bigint << 40;
BEGIN
    IF EXISTS (SELECT 1 FROM mbus.event_partitions AS p WHERE p.partition_no = p_no) THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE mbus.%I PARTITION OF mbus.events FOR VALUES FROM (%s) TO (%s) '
                   'WITH (autovacuum_vacuum_insert_threshold = -1)',
                   v_name, v_lo, v_lo + (1::bigint << 40));
    INSERT INTO mbus.event_partitions (partition_no, name, lo_id, hi_id)
    VALUES (p_no, v_name, v_lo, v_lo + (1::bigint << 40));
    RETURN true;
END;
$$;

-- _partition_needed(partition, group cursor): whether a live group may still have unread
-- events in the partition.
CREATE FUNCTION mbus._partition_needed(p_name text, g mbus.stream_groups,
                                       c mbus.stream_cursors)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_found boolean;
BEGIN
    EXECUTE format(
        'SELECT EXISTS (SELECT 1 FROM mbus.%I AS e '
        'WHERE (e.txid = ANY ($1) OR e.txid >= $2) '
        '  AND NOT mbus._consumed(e.txid, e.id, ROW($3, $4, $5, $6)::mbus.stream_position) '
        '  AND ($7::text[] IS NULL OR e.topic = ANY ($7)) '
        '  AND ($8 = 1 OR mbus.key_slot(e.key, e.id, $8) = $9))', p_name)
    INTO v_found
    USING ARRAY(SELECT pg_snapshot_xip(c.lo)), pg_snapshot_xmax(c.lo), c.lo, c.hi,
          c.after_txid, c.after_id, g.topics, g.slots, c.slot;
    RETURN v_found;
END;
$$;

-- maintain(p_now): the periodic job (workers and `pgmbus maintain` run it).
--   1. when the current partition has taken ids for streams.partition_interval, ids move on to
--      the next one (the sequence jumps to its range);
--   2. streams.partitions_ahead empty partitions are kept ready;
--   3. a group with unread events whose position is older than its max_lag is expired, loudly:
--      a WARNING, an event on topic 'mbus.group_expired' and the counter 'groups_expired';
--   4. closed partitions older than streams.retention are dropped, except those a live group
--      still has unread events in (reported as kept);
--   5. subscriptions inactive for longer than their expires_after are removed.
-- Returns a JSON report of what it did. Serialized by an advisory lock.
CREATE FUNCTION mbus.maintain(p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now       timestamptz := coalesce(p_now, now());
    v_interval  interval := mbus.get_setting('streams.partition_interval', '"1 day"')
                            #>> '{}';
    v_ahead     integer := mbus.get_setting('streams.partitions_ahead', '2')::integer;
    v_retention interval := mbus.get_setting('streams.retention', '"7 days"') #>> '{}';
    v_cur       mbus.event_partitions;
    v_seq       bigint;
    v_created   text[] := '{}';
    v_dropped   text[] := '{}';
    v_kept      jsonb := '[]';
    v_expired   text[] := '{}';
    v_subs      bigint;
    v_tempq     integer;
    v_holders   text[];
    p           mbus.event_partitions;
    g           mbus.stream_groups;
    c           mbus.stream_cursors;
    v_lag       interval;
    v_rec       record;
BEGIN
    PERFORM mbus._check_log();
    PERFORM pg_advisory_xact_lock(hashtextextended('mbus.streams.maintain', 0));

    -- 1 and 2: the current partition, rollover, partitions ahead.
    SELECT last_value INTO v_seq FROM mbus.event_seq;
    -- (setval is not transactional: should a maintain() that moved the sequence roll back, the
    -- partition the ids now go to is created here)
    IF mbus._ensure_partition((v_seq >> 40)::integer) THEN
        v_created := v_created || format('events_%s', lpad((v_seq >> 40)::text, 7, '0'));
    END IF;
    SELECT * INTO v_cur FROM mbus.event_partitions AS ep
    WHERE ep.lo_id <= v_seq AND v_seq < ep.hi_id;
    IF v_cur.opened_at IS NULL THEN
        UPDATE mbus.event_partitions AS ep SET opened_at = v_now
        WHERE ep.partition_no = v_cur.partition_no;
        UPDATE mbus.event_partitions AS ep SET closed_at = v_now
        WHERE ep.partition_no < v_cur.partition_no AND ep.closed_at IS NULL
          AND ep.opened_at IS NOT NULL;
        v_cur.opened_at := v_now;
    ELSIF v_cur.opened_at + v_interval <= v_now THEN
        IF mbus._ensure_partition(v_cur.partition_no + 1) THEN
            v_created := v_created || format('events_%s',
                                             lpad((v_cur.partition_no + 1)::text, 7, '0'));
        END IF;
        PERFORM setval('mbus.event_seq', v_cur.hi_id, false);
        UPDATE mbus.event_partitions AS ep SET closed_at = v_now
        WHERE ep.partition_no = v_cur.partition_no;
        UPDATE mbus.event_partitions AS ep SET opened_at = v_now
        WHERE ep.partition_no = v_cur.partition_no + 1;
        v_cur.partition_no := v_cur.partition_no + 1;
    END IF;
    FOR i IN 1..greatest(v_ahead, 1) LOOP
        IF mbus._ensure_partition(v_cur.partition_no + i) THEN
            v_created := v_created || format('events_%s',
                                             lpad((v_cur.partition_no + i)::text, 7, '0'));
        END IF;
    END LOOP;

    -- 3: lagging groups.
    FOR v_rec IN
        SELECT sg AS g, sc AS c FROM mbus.stream_groups AS sg
        JOIN mbus.stream_cursors AS sc ON sc.group_name = sg.name
        WHERE sg.state = 'active' AND sg.max_lag IS NOT NULL
          AND sc.lo_taken_at + sg.max_lag < v_now
        ORDER BY sg.name, sc.slot
    LOOP
        g := v_rec.g;
        c := v_rec.c;
        IF g.name = ANY (v_expired) THEN
            CONTINUE;
        END IF;
        IF EXISTS (SELECT 1 FROM mbus.event_partitions AS ep
                   WHERE mbus._partition_needed(ep.name, g, c)) THEN
            v_lag := v_now - c.lo_taken_at;
            UPDATE mbus.stream_groups AS sg
            SET state = 'expired', expired_at = v_now,
                expired_why = format('slot %s lagged %s behind (max_lag %s)', c.slot, v_lag,
                                     g.max_lag)
            WHERE sg.name = g.name;
            v_expired := v_expired || g.name;
            PERFORM mbus._count('groups_expired');
            INSERT INTO mbus.events (topic, key, payload)
            VALUES ('mbus.group_expired', g.name,
                    jsonb_build_object('group', g.name, 'slot', c.slot, 'lag', v_lag::text,
                                       'max_lag', g.max_lag::text, 'expired_at', v_now));
            RAISE WARNING 'pgmbus: consumer group % expired: slot % lagged % behind (max_lag %)',
                g.name, c.slot, v_lag, g.max_lag;
        END IF;
    END LOOP;

    -- 4: retention.
    FOR p IN
        SELECT * FROM mbus.event_partitions AS ep
        WHERE ep.closed_at IS NOT NULL AND ep.closed_at + v_retention < v_now
        ORDER BY ep.partition_no
    LOOP
        v_holders := ARRAY(
            SELECT DISTINCT sg.name
            FROM mbus.stream_groups AS sg
            JOIN mbus.stream_cursors AS sc ON sc.group_name = sg.name
            WHERE sg.state = 'active' AND mbus._partition_needed(p.name, sg, sc)
            ORDER BY sg.name);
        IF cardinality(v_holders) > 0 THEN
            v_kept := v_kept || jsonb_build_object('partition', p.name, 'groups', v_holders);
            CONTINUE;
        END IF;
        EXECUTE format('DROP TABLE mbus.%I', p.name);
        DELETE FROM mbus.event_partitions AS ep WHERE ep.partition_no = p.partition_no;
        v_dropped := v_dropped || p.name;
    END LOOP;

    -- 5: subscriptions of departed listeners.
    DELETE FROM mbus.subscriptions AS s
    WHERE s.expires_after IS NOT NULL AND s.last_active_at + s.expires_after < v_now;
    GET DIAGNOSTICS v_subs = ROW_COUNT;

    -- 6: temporary queues and consumers whose session has ended (the seed's clear_tempq), so
    -- that the regular maintenance call collects them.
    v_tempq := mbus.clear_tempq();

    RETURN jsonb_build_object('created', to_jsonb(v_created), 'dropped', to_jsonb(v_dropped),
                              'kept', v_kept, 'expired_groups', to_jsonb(v_expired),
                              'expired_subscriptions', v_subs, 'temporary_dropped', v_tempq);
END;
$$;

---------------------------------------------------------------------------------------------
-- Subscriptions (PGMB): conditions with params, matched per group at read time
---------------------------------------------------------------------------------------------
-- A subscription belongs to a group and says which events it wants: condition is a boolean SQL
-- expression over e (the event: id, topic, key, payload, headers, published_at) and s (the
-- subscription: id, params ...). Subscriptions with the same condition are matched by one
-- query per group batch, a join on params that the GIN index on params serves, so ten
-- thousand subscriptions that differ only in params cost about one. Identical (group,
-- condition, params) subscriptions are one row, shared by every listener that asks for it.
CREATE TABLE mbus.subscriptions (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    group_name     text        NOT NULL REFERENCES mbus.stream_groups ON DELETE CASCADE,
    condition      text        NOT NULL CHECK (condition <> ''),
    params         jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(params) = 'object'),
    expires_after  interval    CHECK (expires_after > interval '0'),
    last_active_at timestamptz NOT NULL DEFAULT now(),
    created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX subscriptions_identity
    ON mbus.subscriptions (group_name, md5(condition), params);
CREATE INDEX subscriptions_params ON mbus.subscriptions USING gin (params jsonb_path_ops)
    WITH (fastupdate = off);

-- _check_condition(condition): raise MB004 unless it is one boolean expression over e and s.
CREATE FUNCTION mbus._check_condition(p_condition text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    IF p_condition IS NULL OR btrim(p_condition) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004', MESSAGE = 'condition must not be empty';
    END IF;
    IF p_condition ~ '(;|--|/\*)' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('condition %L may not contain ";" or comments', p_condition);
    END IF;
    BEGIN
        EXECUTE format('SELECT (%s)::boolean FROM mbus.events AS e, mbus.subscriptions AS s '
                       'WHERE false', p_condition);
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('invalid condition %L: %s', p_condition, SQLERRM),
            HINT = 'a boolean SQL expression over e (the event) and s (the subscription), '
                   'for example: s.params @> jsonb_build_object(''topic'', e.topic)';
    END;
END;
$$;

-- subscribe(group, condition, params, expires_after): the id of the group's subscription with
-- this condition and params, created when new (and marked active either way). With
-- expires_after, maintain() removes it after that long without touch_subscription().
CREATE FUNCTION mbus.subscribe("group" text, condition text, params jsonb DEFAULT '{}',
                               expires_after interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus._group("group");
    PERFORM mbus._check_condition(subscribe.condition);
    IF subscribe.params IS NULL OR jsonb_typeof(subscribe.params) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'params must be a JSON object';
    END IF;
    INSERT INTO mbus.subscriptions AS s (group_name, condition, params, expires_after)
    VALUES (subscribe."group", subscribe.condition, subscribe.params, subscribe.expires_after)
    ON CONFLICT (group_name, md5(condition), params) DO UPDATE
    SET last_active_at = now(),
        expires_after = CASE WHEN s.expires_after IS NULL OR excluded.expires_after IS NULL
                             THEN NULL
                             ELSE greatest(s.expires_after, excluded.expires_after) END
    RETURNING s.id INTO v_id;
    RETURN v_id;
END;
$$;

-- touch_subscription(id): the listener is still there (postpones expiry).
CREATE FUNCTION mbus.touch_subscription(id bigint, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    UPDATE mbus.subscriptions AS s SET last_active_at = coalesce(p_now, now())
    WHERE s.id = touch_subscription.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('subscription %s does not exist (expired?)', id);
    END IF;
END;
$$;

-- unsubscribe(id): remove a subscription.
CREATE FUNCTION mbus.unsubscribe(id bigint)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.subscriptions AS s WHERE s.id = unsubscribe.id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('subscription %s does not exist', id);
    END IF;
END;
$$;

-- _match(group, events): for each event, the ids of the group's subscriptions it matches.
-- One query per distinct condition of the group; an event that matches none is left out.
CREATE FUNCTION mbus._match(p_group text, p_events mbus.stream_row[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cond text;
BEGIN
    FOR v_cond IN
        SELECT DISTINCT s.condition FROM mbus.subscriptions AS s WHERE s.group_name = p_group
    LOOP
        RETURN QUERY EXECUTE format(
            'SELECT e.id, array_agg(s.id ORDER BY s.id) '
            'FROM unnest($1) AS e JOIN mbus.subscriptions AS s '
            '  ON s.group_name = $2 AND s.condition = $3 AND (%s) '
            'GROUP BY e.id', v_cond)
        USING p_events, p_group, v_cond;
    END LOOP;
END;
$$;

-- match_subscriptions(group, event ids): for each of these events, the ids of the group's
-- subscriptions it matches (events that match none are left out).
CREATE FUNCTION mbus.match_subscriptions("group" text, event_ids bigint[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT m.event_id, array_agg(DISTINCT x ORDER BY x)
    FROM mbus._match("group", ARRAY(
             SELECT ROW(e.txid, e.id, e.topic, e.key, e.payload, e.headers,
                        e.published_at)::mbus.stream_row
             FROM mbus.events AS e WHERE e.id = ANY (event_ids))) AS m,
         unnest(m.subscription_ids) AS x
    GROUP BY m.event_id;
$$;

-- read_subscriptions(group, max_events, slot): read_next for a group of subscriptions: its next
-- batch, only the events that matched at least one of its subscriptions, each with the ids of
-- the subscriptions it matched. Commit with commit(group, cursor) as usual. Batches in which
-- nothing matched are committed here (in the caller's transaction) and reading goes on, so an
-- empty result means the group has caught up.
CREATE FUNCTION mbus.read_subscriptions("group" text, max_events integer DEFAULT 1000,
                                        slot integer DEFAULT NULL)
RETURNS TABLE (cursor text, id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz, subscription_ids bigint[])
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_batch  mbus.stream_row[];
    v_cursor text;
BEGIN
    LOOP
        SELECT array_agg(ROW(NULL, r.id, r.topic, r.key, r.payload, r.headers,
                             r.published_at)::mbus.stream_row ORDER BY r.ordinality),
               min(r.cursor)
        INTO v_batch, v_cursor
        FROM mbus.read_next("group", max_events, slot) WITH ORDINALITY AS r;
        IF v_cursor IS NULL THEN
            RETURN;
        END IF;
        RETURN QUERY
        SELECT v_cursor, b.id, b.topic, b.key, b.payload, b.headers, b.published_at,
               m.subscription_ids
        FROM unnest(v_batch) WITH ORDINALITY AS b
        JOIN (SELECT mm.event_id, array_agg(DISTINCT x ORDER BY x) AS subscription_ids
              FROM mbus._match("group", v_batch) AS mm, unnest(mm.subscription_ids) AS x
              GROUP BY mm.event_id) AS m ON m.event_id = b.id
        ORDER BY b.ordinality;
        IF FOUND THEN
            RETURN;
        END IF;
        PERFORM mbus.commit("group", v_cursor);
    END LOOP;
END;
$$;

---------------------------------------------------------------------------------------------
-- Change capture: triggers publish a table's changes in the writing transaction
---------------------------------------------------------------------------------------------
-- Every insert, update and delete (from any statement: COPY, INSERT ... ON CONFLICT, bulk
-- UPDATE) appends one event, and TRUNCATE one more, in the transaction that made the change.
-- Each change is its own event, so a row that changes often loses no intermediate state, and
-- the snapshot cursors make the changes readable in commit order with no background job.
-- Payload: {"op", "table", "key": {primary key}, "row": {captured columns},
--           "changed": [columns] (updates), "old_key": {...} (when an update changed the key)}.
-- The event key is the primary key's value (its JSON text when the key has several columns).
CREATE TABLE mbus.captures (
    tbl         regclass    PRIMARY KEY,
    topic       text        NOT NULL,
    columns     text[],
    key_columns text[]      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION mbus._capture_row()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_topic   text := TG_ARGV[0];
    v_keys    text[] := TG_ARGV[1]::text[];
    v_cols    text[] := nullif(TG_ARGV[2], '*')::text[];
    v_new     jsonb;
    v_old     jsonb;
    v_row     jsonb;
    v_key     jsonb;
    v_old_key jsonb;
    v_changed text[];
    v_payload jsonb;
BEGIN
    IF current_setting('mbus.streams_log_ok', true) IS DISTINCT FROM 'yes' THEN
        PERFORM mbus._check_log();
    END IF;
    IF TG_OP <> 'DELETE' THEN
        v_new := to_jsonb(NEW);
    END IF;
    IF TG_OP <> 'INSERT' THEN
        v_old := to_jsonb(OLD);
    END IF;
    v_row := coalesce(v_new, v_old);
    SELECT coalesce(jsonb_object_agg(k, v_row -> k), '{}') INTO v_key FROM unnest(v_keys) AS k;
    IF TG_OP = 'UPDATE' THEN
        SELECT coalesce(array_agg(k ORDER BY k), '{}') INTO v_changed
        FROM jsonb_object_keys(v_new) AS k
        WHERE (v_new -> k) IS DISTINCT FROM (v_old -> k)
          AND (v_cols IS NULL OR k = ANY (v_cols) OR k = ANY (v_keys));
        IF cardinality(v_changed) = 0 THEN
            RETURN NULL;
        END IF;
        SELECT coalesce(jsonb_object_agg(k, v_old -> k), '{}') INTO v_old_key
        FROM unnest(v_keys) AS k;
        IF v_old_key = v_key THEN
            v_old_key := NULL;
        END IF;
    END IF;
    IF v_cols IS NOT NULL THEN
        SELECT coalesce(jsonb_object_agg(k, v_row -> k), '{}') INTO v_row
        FROM jsonb_object_keys(v_row) AS k
        WHERE k = ANY (v_cols) OR k = ANY (v_keys);
    END IF;
    v_payload := jsonb_build_object('op', lower(TG_OP),
                                    'table', format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME),
                                    'key', v_key, 'row', v_row);
    IF TG_OP = 'UPDATE' THEN
        v_payload := v_payload || jsonb_build_object('changed', to_jsonb(v_changed));
        IF v_old_key IS NOT NULL THEN
            v_payload := v_payload || jsonb_build_object('old_key', v_old_key);
        END IF;
    END IF;
    INSERT INTO mbus.events (topic, key, payload)
    VALUES (v_topic,
            CASE WHEN cardinality(v_keys) = 1 THEN v_key ->> v_keys[1]
                 WHEN cardinality(v_keys) > 1 THEN v_key::text END,
            v_payload);
    PERFORM pg_notify('mbus_events', '');
    RETURN NULL;
END;
$$;

CREATE FUNCTION mbus._capture_truncate()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM mbus._check_log();
    INSERT INTO mbus.events (topic, payload)
    VALUES (TG_ARGV[0], jsonb_build_object('op', 'truncate', 'table',
                                           format('%I.%I', TG_TABLE_SCHEMA, TG_TABLE_NAME)));
    RETURN NULL;
END;
$$;

-- capture_table(tbl, topic, columns): publish tbl's changes on topic (default: the table's
-- name), with these columns in "row" (default: all; the primary key is always included).
-- Calling it again replaces the previous capture of the table.
CREATE FUNCTION mbus.capture_table(tbl regclass, topic text DEFAULT NULL,
                                   columns text[] DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_topic  text;
    v_keys   text[];
    v_bad    text[];
    v_schema text;
    v_name   text;
BEGIN
    SELECT n.nspname, c.relname INTO v_schema, v_name
    FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = tbl AND c.relkind IN ('r', 'p');
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('%s is not a table', tbl);
    END IF;
    IF v_schema = 'mbus' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'tables of the mbus schema cannot be captured';
    END IF;
    v_topic := coalesce(topic, v_name);
    IF v_topic = '' OR octet_length(v_topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('invalid topic %L', v_topic);
    END IF;
    v_keys := ARRAY(
        SELECT a.attname FROM pg_index AS i
        CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k (attnum, n)
        JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
        WHERE i.indrelid = tbl AND i.indisprimary
        ORDER BY k.n);
    IF columns IS NOT NULL THEN
        v_bad := ARRAY(SELECT col FROM unnest(columns) AS col
                       WHERE NOT EXISTS (SELECT 1 FROM pg_attribute AS a
                                         WHERE a.attrelid = tbl AND a.attname = col
                                           AND a.attnum > 0 AND NOT a.attisdropped));
        IF cardinality(v_bad) > 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('%s has no column(s) %s', tbl, array_to_string(v_bad, ', '));
        END IF;
    END IF;
    PERFORM mbus.stop_capture(tbl, missing_ok => true);
    EXECUTE format('CREATE TRIGGER mbus_capture_row AFTER INSERT OR UPDATE OR DELETE ON %s '
                   'FOR EACH ROW EXECUTE FUNCTION mbus._capture_row(%L, %L, %L)',
                   tbl, v_topic, v_keys::text, coalesce(columns::text, '*'));
    EXECUTE format('CREATE TRIGGER mbus_capture_truncate AFTER TRUNCATE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION mbus._capture_truncate(%L)',
                   tbl, v_topic);
    INSERT INTO mbus.captures (tbl, topic, columns, key_columns)
    VALUES (tbl, v_topic, columns, v_keys);
END;
$$;

-- stop_capture(tbl): remove the capture triggers of tbl.
CREATE FUNCTION mbus.stop_capture(tbl regclass, missing_ok boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.captures AS c WHERE c.tbl = stop_capture.tbl;
    IF NOT FOUND AND NOT missing_ok THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('table %s is not captured', tbl);
    END IF;
    EXECUTE format('DROP TRIGGER IF EXISTS mbus_capture_row ON %s', tbl);
    EXECUTE format('DROP TRIGGER IF EXISTS mbus_capture_truncate ON %s', tbl);
END;
$$;

---------------------------------------------------------------------------------------------
-- Repair after pg_dump / pg_restore into another cluster
---------------------------------------------------------------------------------------------
-- repair_after_restore(): make the log consistent in this cluster. For each group and slot,
-- the events it had not consumed (judged with the old cluster's ids, which still order the
-- old transactions correctly among themselves) are queued on the group's retry path to be
-- delivered again; then every event gets the transaction id 1 (visible to every snapshot: an
-- old, finished transaction) and every cursor is put at this cluster's current snapshot.
-- Returns the number of events queued per group. Pending retries are kept.
CREATE FUNCTION mbus.repair_after_restore()
RETURNS TABLE (group_name text, redelivered bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    g  mbus.stream_groups;
    c  mbus.stream_cursors;
    v_n bigint;
    v_counts jsonb := '{}';
    v_rec    record;
BEGIN
    LOCK TABLE mbus.stream_cursors, mbus.stream_groups IN EXCLUSIVE MODE;
    LOCK TABLE mbus.events IN SHARE MODE;
    FOR v_rec IN
        SELECT sg AS g, sc AS c FROM mbus.stream_groups AS sg
        JOIN mbus.stream_cursors AS sc ON sc.group_name = sg.name
        WHERE sg.state = 'active'
        ORDER BY sg.name, sc.slot
    LOOP
        g := v_rec.g;
        c := v_rec.c;
        INSERT INTO mbus.stream_retries (group_name, event_id, topic, key, payload, headers,
                                         published_at, attempts, next_at, last_error)
        SELECT g.name, e.id, e.topic, e.key, e.payload, e.headers, e.published_at, 0, now(),
               'redelivered by repair-after-restore'
        FROM mbus.events AS e
        WHERE NOT mbus._consumed(e.txid, e.id, ROW(c.lo, c.hi, c.after_txid, c.after_id))
          AND (g.topics IS NULL OR e.topic = ANY (g.topics))
          AND (g.slots = 1 OR mbus.key_slot(e.key, e.id, g.slots) = c.slot)
        ON CONFLICT DO NOTHING;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        v_counts := jsonb_set(v_counts, ARRAY[g.name],
                              to_jsonb(coalesce((v_counts ->> g.name)::bigint, 0) + v_n));
    END LOOP;
    UPDATE mbus.events SET txid = '1'::xid8 WHERE txid <> '1'::xid8;
    UPDATE mbus.stream_cursors
    SET lo = mbus._snapshot_now(), hi = NULL, after_txid = NULL, after_id = NULL,
        lo_taken_at = now(), committed_at = now();
    UPDATE mbus.stream_state
    SET system_identifier = mbus._system_identifier(), repaired_at = now();
    PERFORM set_config('mbus.streams_log_ok', 'yes', false);
    RETURN QUERY SELECT k, v::bigint FROM jsonb_each_text(v_counts) AS j (k, v) ORDER BY k;
END;
$$;

-- log_status(): whether the log's transaction ids are this cluster's (for health checks).
CREATE FUNCTION mbus.log_status()
RETURNS TABLE (consistent boolean, stored_system_identifier bigint,
               system_identifier bigint, repaired_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT s.system_identifier = mbus._system_identifier(), s.system_identifier,
           mbus._system_identifier(), s.repaired_at
    FROM mbus.stream_state AS s;
$$;

-- The first partitions.
SELECT mbus._ensure_partition(1);
SELECT mbus.maintain();

-- PUBLIC may execute none of the stream functions (see 0001's restrict_public_execute).
SELECT mbus.restrict_public_execute();
