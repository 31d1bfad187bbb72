-- queues: the mbus queue API (post, consume, durable consumers with selectors, delay,
-- expiry, peek/take, triggers, the dead-message queue, leases, wake-ups, metrics).
--
-- Storage. Each queue <q> has one table mbus.q_<q> holding one row per DELIVERY: a message
-- posted to <q> is fanned out at post time into one row per durable consumer whose selector
-- holds for it (selectors are static, so evaluating them at post time is exact). A consumer
-- therefore only ever scans its own rows (index (c, vt, id)): a selective consumer costs
-- nothing on a large backlog, a consumer receives exactly the messages posted after it was
-- created, and consuming is a DELETE (transactional style) or an UPDATE of the lease columns
-- (lease style) of rows no other consumer looks at. Nothing is ever updated in place for the
-- transactional style, so there is no `received int[]` array to bloat.
--
--   vt            the time from which the row may be claimed: coalesce(delayed_until, added)
--                 when posted, now + lease while leased, now + delay after a nack.
--   lease_token   set while a lease holds the row; ack/nack/extend/bury must present it.
--
-- Per-queue functions are generated with static SQL (format('%I') only) by
-- mbus.regenerate_queue: post_<q>, postn_<q>, peek_<q>, clear_queue_<q>, take_<q>, ack_<q>,
-- nack_<q>, extend_<q>, bury_<q>, and per consumer consume_<q>_by_<c>, consumen_<q>_by_<c>,
-- lease_<q>_by_<c>, take_from_<q>_by_<c>. The generic mbus.post/consume/take/... dispatch to
-- them (one EXECUTE per call); clients that care about speed call the generated ones.
--
-- Hot generated functions (post, postn, consume, consumen, lease, ack, nack, extend) carry no
-- SET search_path (it costs a GUC save/restore per call): they are SECURITY INVOKER, qualify
-- every non-catalog name, and pg_catalog is searched first. Claims SET enable_bitmapscan = off:
-- on a queue whose statistics lag (a fresh or fast-growing table) the planner would otherwise
-- pick a bitmap scan + sort of the whole backlog instead of the ordered scan of the claim index.
-- Claims also SET plan_cache_mode = force_generic_plan and enable_seqscan = off: with custom
-- plans (LIMIT amt and the clock are parameters, so the generic plan never looks cheaper)
-- every claim was planned again, up to 40 % of a small claim's CPU; the one cached generic
-- plan is the ordered scan of the claim index whatever the statistics say.
--
-- Deliberate breaks with the original mbus API: payloads (data, headers, properties) are jsonb objects, not
-- hstore; times are timestamptz; headers->'seenby' is a JSON array of database names.

-- The row shape every consume/take returns (the original mbus API's mbus.qt_model).
CREATE TYPE mbus.qt_model AS (
    id            bigint,
    iid           text,
    added         timestamptz,
    delayed_until timestamptz,
    expires       timestamptz,
    headers       jsonb,
    properties    jsonb,
    data          jsonb,
    consume_after text[],
    attempts      integer,
    lease_token   uuid,
    lease_until   timestamptz
);

COMMENT ON TYPE mbus.qt_model IS
    'A queue message as consume/take return it (lease_token/lease_until only for leases).';

-- Message ids are unique across all queues of the database.
CREATE SEQUENCE mbus.msg_id_seq AS bigint;

CREATE TABLE mbus.queue (
    qname          text PRIMARY KEY CHECK (qname ~ '^[a-z][a-z0-9_]*$' AND octet_length(qname) <= 24),
    ncons          integer NOT NULL CHECK (ncons > 0),
    roles_security boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mbus.queue IS 'Queues; each has a delivery table mbus.q_<qname>.';

COMMENT ON COLUMN mbus.queue.ncons IS
    'Accepted for the original mbus API''s signature and kept; unused: SKIP LOCKED claims need no partitions.';

CREATE TABLE mbus.consumer (
    cid        integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    qname      text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    cname      text NOT NULL CHECK (cname ~ '^[a-z][a-z0-9_]*$' AND octet_length(cname) <= 24),
    selector   text,
    noindex    boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (qname, cname)
);

-- The original mbus API: consumer names are unique among all consumers, except the per-queue 'default'.
CREATE UNIQUE INDEX consumer_cname_unique ON mbus.consumer (cname) WHERE cname <> 'default';

COMMENT ON TABLE mbus.consumer IS 'Durable consumers; selector NULL means every message.';

CREATE TABLE mbus.queue_trigger (
    src      text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    dst      text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    selector text,
    PRIMARY KEY (src, dst),
    CHECK (src <> dst)
);

COMMENT ON TABLE mbus.queue_trigger IS 'Messages posted to src are copied to dst when selector holds.';

CREATE TABLE mbus.dmq (
    dmq_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    qname         text NOT NULL,
    cname         text,
    id            bigint,
    iid           text NOT NULL,
    added         timestamptz,
    delayed_until timestamptz,
    expires       timestamptz,
    headers       jsonb,
    properties    jsonb,
    data          jsonb NOT NULL,
    consume_after text[],
    attempts      integer NOT NULL DEFAULT 0,
    reason        text NOT NULL,
    died_at       timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX dmq_iid ON mbus.dmq (iid);

CREATE INDEX dmq_qname ON mbus.dmq (qname, dmq_id);

COMMENT ON TABLE mbus.dmq IS
    'Dead messages: kept with their iid and the reason; mbus.dmq_replay puts one back.';

-- Wake-ups. A NOTIFY takes a cluster-wide lock from pre-commit to the end of the commit, so
-- transactions that notify commit one at a time (no group commit): notifying on every post
-- would cap a busy queue at one fsync per message. Posts therefore notify only while somebody
-- waits: a waiting consumer LISTENs on mbus_q_<q> and registers here (mbus.await_queue) before
-- its last look at the queue, and unregisters when it stops waiting. A busy queue, whose
-- consumers never wait, sends no notifications at all. A missed notification (a post that
-- checked just before the registration committed) costs the waiter one poll interval.
CREATE UNLOGGED TABLE mbus.queue_waiter (
    qname text NOT NULL,
    pid   integer NOT NULL,
    since timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (qname, pid)
);

COMMENT ON TABLE mbus.queue_waiter IS
    'Sessions waiting for a post to a queue (LISTEN mbus_q_<qname>); posts notify only then.';

-- ---------------------------------------------------------------------------------------------
-- Message dependencies (consume_after), temporary queues and consumers, the roles security
-- model, views, sagas.
-- ---------------------------------------------------------------------------------------------

-- Dependencies. A message posted with headers.consume_after = [iid, ...] while any of those
-- iids still exists (in the queue its iid names, or in the dmq) WAITS: its deliveries get
-- vt = 'infinity', so every claim's index scan (c, vt <= now) stops before them and a backlog of
-- waiting messages costs a claim nothing. mbus.msg_wait counts the dependencies left, and
-- mbus.msg_dep holds one edge per (dependency, waiting message). Delivery rows that others
-- wait on carry waited = true; a deferred constraint trigger (WHEN OLD.waited, so other rows
-- queue no event) runs mbus.release_deps at commit of the transaction that deleted the row.
-- Unknown iids (not found at post time: consumed already, never posted, foreign, or posted
-- later) are satisfied, so the wait graph is acyclic by construction.
CREATE TABLE mbus.msg_wait (
    qname   text NOT NULL,
    id      bigint NOT NULL,
    iid     text NOT NULL,
    pending integer NOT NULL CHECK (pending >= 0),
    since   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (qname, id)
);

COMMENT ON TABLE mbus.msg_wait IS 'Messages waiting for consume_after dependencies (count left).';

CREATE TABLE mbus.msg_dep (
    dep_iid text NOT NULL,
    qname   text NOT NULL,
    id      bigint NOT NULL,
    PRIMARY KEY (dep_iid, qname, id)
);

CREATE INDEX msg_dep_waiter ON mbus.msg_dep (qname, id);

COMMENT ON TABLE mbus.msg_dep IS 'Edges: message (qname, id) waits until dep_iid is consumed.';

-- ---------------------------------------------------------------------------------------------
-- Views: create_view(qname, viewname) makes a view whose INSERT posts to the queue; grants on
-- the view are all an unprivileged role needs. Reading it lists the queue's pending messages.
CREATE TABLE mbus.queue_view (
    view_schema text NOT NULL,
    view_name   text NOT NULL,
    qname       text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    PRIMARY KEY (view_schema, view_name)
);

-- ---------------------------------------------------------------------------------------------
-- Temporary queues and consumers: they belong to the session (backend pid + its start time)
-- that made them; mbus.clear_tempq drops those whose session is gone. create_temporary_*
-- collect on the way, so a busy system collects without a scheduler.
CREATE SEQUENCE mbus.temp_seq AS bigint;

CREATE TABLE mbus.temp_object (
    kind          text NOT NULL CHECK (kind IN ('queue', 'consumer')),
    qname         text NOT NULL,
    cname         text NOT NULL DEFAULT '',
    pid           integer NOT NULL,
    backend_start timestamptz,
    PRIMARY KEY (kind, qname, cname)
);

COMMENT ON TABLE mbus.temp_object IS 'Temporary queues and consumers and the session owning each.';

-- ---------------------------------------------------------------------------------------------
-- Sagas (the original mbus API's pattern). saga_start posts, in the caller's transaction:
--   * the forward messages, each with consume_after = the iids of the steps it comes after;
--   * the bung: a message in mbus_saga_bung that is never consumable (delayed_until infinity),
--     only taken, listing the forward iids and the final message's iid;
--   * one compensation message per step that has one, consume_after = the bung;
--   * the done message (mbus_saga_done) after every compensation: records the rollback;
--   * the final message (mbus_saga_final) after every forward step, listing the compensations,
--     the done message and the bung, which it takes when the forward path completes.
-- Rollback = take the bung and the forward messages (saga_rollback), atomically with the
-- failing handler's transaction. Forward and compensation handlers must consume in a
-- transaction (take waits for a handler that holds its message, so no forward step commits
-- after the rollback). saga_pump handles the final and done messages.
CREATE TABLE mbus.saga (
    saga_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL,
    state       text NOT NULL DEFAULT 'running'
                CHECK (state IN ('running', 'completed', 'compensating', 'compensated')),
    data        jsonb,
    bung_iid    text NOT NULL UNIQUE,
    final_iid   text NOT NULL,
    done_iid    text NOT NULL,
    reason      text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);

CREATE TABLE mbus.saga_step (
    saga_id        bigint NOT NULL REFERENCES mbus.saga (saga_id) ON DELETE CASCADE,
    step           text NOT NULL,
    ord            integer NOT NULL,
    qname          text NOT NULL,
    iid            text NOT NULL,
    after          text[] NOT NULL DEFAULT '{}',
    comp_qname     text,
    comp_iid       text,
    done_at        timestamptz,
    compensated_at timestamptz,
    PRIMARY KEY (saga_id, step)
);

-- ---------------------------------------------------------------------------------------------
-- Segments: delivery tables, recycled by TRUNCATE instead of VACUUM.
--
-- Why. A busy queue inserts and deletes its whole volume. Without VACUUM the free space map of a
-- delivery table is never updated, so every insert extends the heap although HOT pruning has
-- emptied the old pages, and btree pages emptied at the left end of the ever-increasing
-- (c, vt, id) and (id) keys are only recycled by VACUUM, so claims walk more and more dead
-- index entries. Default autovacuum (a 1-minute naptime, a 20 % scale factor) cannot keep up
-- with a queue that turns over a million rows a minute; tuning it per table would be the
-- "aggressive VACUUM" the original design asks for. Storage must recycle itself instead (PgQ's rotating
-- event tables): each queue's table mbus.q_<q> is LIST-partitioned on a column seg into
--   q_<q>$0       the parking segment: deliveries that will wait long when posted (vt more
--                 than a minute ahead: long delays, consume_after waiting rows); never
--                 truncated, low traffic, ordinary autovacuum keeps it;
--   q_<q>$1..$3   rotating segments: posts go to the current one (mbus.queue_segment.cur).
-- mbus.rotate_queue(q), run in autocommit about once a second by Bus consumers, the worker,
-- `pgmbus queue rotate` or the user's scheduler, TRUNCATEs every rotating segment that is not
-- current and has no row left, and makes an empty one current when the current one passed
-- rotate_bytes. TRUNCATE gives the space back at once, heap and indexes, whatever the
-- autovacuum settings. Its ACCESS EXCLUSIVE lock is taken with NOWAIT (an open transaction that
-- touched the segment makes it skip, never wait, so it never queues behind or ahead of
-- consumers); emptiness is checked under the lock. Its callers run it in autocommit; it
-- refuses to work in a transaction that wrote already or is not READ COMMITTED.
--
-- Everything that reads or writes mbus.q_<q> by name (take, peek, clear_queue, ack/nack/extend/
-- bury, dependencies, views, metrics) works on the partitioned parent unchanged. Claims lock
-- through the parent (one ordered Merge Append of the segments' claim indexes, one generic
-- plan) and then delete or update each segment's rows by ctid (ctids are per segment).

-- Per-queue segment state.
CREATE TABLE mbus.queue_segment (
    qname         text PRIMARY KEY REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    cur           smallint NOT NULL DEFAULT 1 CHECK (cur BETWEEN 1 AND 3),
    rotate_bytes  bigint NOT NULL DEFAULT 8388608 CHECK (rotate_bytes > 0),
    closing       smallint CHECK (closing BETWEEN 1 AND 3),
    closing_since timestamptz,
    rotations     bigint NOT NULL DEFAULT 0,
    truncations   bigint NOT NULL DEFAULT 0,
    rotated_at    timestamptz
);

COMMENT ON TABLE mbus.queue_segment IS
    'Delivery-table segments per queue: cur receives posts; rotate_queue truncates drained ones.';

COMMENT ON COLUMN mbus.queue_segment.closing IS
    'A drained segment rotate_queue waits to truncate: claims skip it while closing_since is fresh.';

COMMENT ON COLUMN mbus.queue_segment.rotate_bytes IS
    'rotate_queue makes another (empty) segment current once the current heap is this big.';
