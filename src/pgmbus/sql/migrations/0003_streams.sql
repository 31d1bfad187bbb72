-- streams: the partitioned event log, consumer groups with snapshot cursors, retries and
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

---------------------------------------------------------------------------------------------
-- Restore detection: stored transaction ids belong to the cluster that wrote them.
---------------------------------------------------------------------------------------------
CREATE TABLE mbus.stream_state (
    singleton         boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    system_identifier bigint      NOT NULL,
    installed_at      timestamptz NOT NULL DEFAULT now(),
    repaired_at       timestamptz
);

INSERT INTO mbus.stream_state (system_identifier)
SELECT c.system_identifier FROM pg_control_system() AS c;

---------------------------------------------------------------------------------------------
-- Snapshots and positions
---------------------------------------------------------------------------------------------
CREATE TYPE mbus.stream_position AS (
    lo         pg_snapshot,
    hi         pg_snapshot,
    after_txid xid8,
    after_id   bigint
);

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
    'Committed position of each group (and slot): see the cursor grammar in 0003_streams.sql.';

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
