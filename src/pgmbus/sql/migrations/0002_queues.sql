-- 0002 queues: the mbus queue API (post, consume, durable consumers with selectors, delay,
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
-- Deliberate breaks with the seed: payloads (data, headers, properties) are jsonb objects, not
-- hstore; times are timestamptz; headers->'seenby' is a JSON array of database names.

-- The row shape every consume/take returns (the seed's mbus.qt_model).
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
    'Accepted for the seed''s signature and kept; unused: SKIP LOCKED claims need no partitions.';

CREATE TABLE mbus.consumer (
    cid        integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    qname      text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    cname      text NOT NULL CHECK (cname ~ '^[a-z][a-z0-9_]*$' AND octet_length(cname) <= 24),
    selector   text,
    noindex    boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (qname, cname)
);

-- The seed: consumer names are unique among all consumers, except the per-queue 'default'.
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

-- await_queue(qname): LISTEN on mbus_q_<qname> and register this session as waiting for posts
-- to qname (call it in a transaction of its own, before the last look at the queue). Entries
-- of sessions that are gone are removed on the way. The table is unlogged, so this commit
-- writes no WAL and does not wait for a disk flush.
CREATE FUNCTION mbus.await_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('LISTEN %I', 'mbus_q_' || qname);
    -- pg_stat_get_activity(pid) reads one backend's entry; pg_stat_activity would read all.
    DELETE FROM mbus.queue_waiter AS w
    WHERE w.qname = await_queue.qname AND w.pid <> pg_backend_pid()
      AND NOT EXISTS (SELECT 1 FROM pg_stat_get_activity(w.pid) AS a);
    INSERT INTO mbus.queue_waiter (qname, pid) VALUES (qname, pg_backend_pid())
    ON CONFLICT ON CONSTRAINT queue_waiter_pkey DO UPDATE SET since = now();
END;
$$;

-- await_done(qname): this session no longer waits for posts to qname (and stops listening).
CREATE FUNCTION mbus.await_done(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.queue_waiter AS w
    WHERE w.qname = await_done.qname AND w.pid = pg_backend_pid();
    EXECUTE format('UNLISTEN %I', 'mbus_q_' || qname);
END;
$$;

-- check_payload(what, value, nullable): raise MB005 unless value is a JSON object.
CREATE FUNCTION mbus.check_payload(what text, value jsonb, nullable boolean DEFAULT true)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF value IS NULL THEN
        IF NOT nullable THEN
            RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = format('%s must not be null', what);
        END IF;
    ELSIF jsonb_typeof(value) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = format('%s must be a JSON object, not %s', what, jsonb_typeof(value));
    END IF;
END;
$$;

-- stamp_headers(headers, qname, added): the headers a message carries in queue qname:
-- seenby (databases it passed, this one appended once), source_db and enqueue_time kept from
-- the original post, destination = this queue.
CREATE FUNCTION mbus.stamp_headers(headers jsonb, qname text, added timestamptz)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT h || jsonb_build_object(
        'seenby', CASE
            WHEN jsonb_typeof(h -> 'seenby') <> 'array' OR h -> 'seenby' IS NULL
                THEN jsonb_build_array(current_database())
            WHEN (h -> 'seenby') ? current_database() THEN h -> 'seenby'
            ELSE (h -> 'seenby') || to_jsonb(current_database()) END,
        'source_db', coalesce(h ->> 'source_db', current_database()),
        'destination', qname,
        'enqueue_time', coalesce(h -> 'enqueue_time', to_jsonb(added)))
    FROM (SELECT coalesce(headers, '{}'::jsonb) AS h) AS s;
$$;

-- queue_of_iid(iid): the queue name an iid was made for ('<qname>.<n>@<database>'), or NULL.
CREATE FUNCTION mbus.queue_of_iid(iid text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT (regexp_match(iid, '^([a-z][a-z0-9_]*)\.[0-9]+@'))[1];
$$;

-- iid_id(iid, qname): the message id n when iid is '<qname>.<n>@<this database>' (the iids
-- this queue makes), else NULL. Such iids are not stored: the row's id gives them back.
CREATE FUNCTION mbus.iid_id(iid text, qname text)
RETURNS bigint
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN r[1] = qname AND r[3] = pg_catalog.current_database()
                     AND pg_catalog.length(r[2]) <= 18 THEN r[2]::bigint END
    FROM (SELECT pg_catalog.regexp_match(iid, '^([a-z][a-z0-9_]*)\.([0-9]+)@(.*)$') AS r) AS s;
$$;

-- get_iid(qname): a new globally unique message id for queue qname: '<qname>.<n>@<database>'.
-- The queue and the database are in it, so mbus.take(iid) finds the queue.
CREATE FUNCTION mbus.get_iid(qname text)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    RETURN format('%s.%s@%s', qname, nextval('mbus.msg_id_seq'), current_database());
END;
$$;

-- require_queue(qname): raise MB001 for a bad name, MB002 when the queue does not exist.
CREATE FUNCTION mbus.require_queue(qname text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    IF NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = require_queue.qname) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('queue %L does not exist', qname);
    END IF;
END;
$$;

-- require_consumer(qname, cname): MB001/MB002 like require_queue, for a consumer of qname.
CREATE FUNCTION mbus.require_consumer(qname text, cname text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    PERFORM mbus.check_name('consumer', cname, 24);
    IF NOT EXISTS (SELECT 1 FROM mbus.consumer AS c
                   WHERE c.qname = require_consumer.qname AND c.cname = require_consumer.cname) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer %L of queue %L does not exist', cname, qname);
    END IF;
END;
$$;

-- check_selector(selector): raise MB004 unless selector is a boolean SQL expression over
-- t (of type mbus.qt_model) built from static values only. The test is PostgreSQL's own rule
-- for index expressions, applied to a scratch table named t inside a subtransaction that is
-- always rolled back: it refuses subqueries, aggregates and anything not IMMUTABLE (now(),
-- current_user, random(), table reads), which is what "static" means here.
CREATE FUNCTION mbus.check_selector(selector text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_state text;
    v_msg   text;
BEGIN
    IF selector IS NULL THEN
        RETURN;
    END IF;
    IF btrim(selector) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004', MESSAGE = 'selector must not be empty';
    END IF;
    BEGIN
        CREATE TEMPORARY TABLE t OF mbus.qt_model;
        EXECUTE format('CREATE INDEX ON pg_temp.t ((CAST((%s) AS boolean)))', selector);
        RAISE EXCEPTION USING ERRCODE = 'MBOK0';  -- roll the scratch objects back
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
        IF v_state <> 'MBOK0' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB004',
                MESSAGE = format('invalid selector %L: %s', selector, v_msg),
                HINT = 'a selector is a boolean expression over t (mbus.qt_model) using only '
                       'static values and immutable functions, e.g. (t.properties->>''k'') = ''v''';
        END IF;
    END;
END;
$$;

-- regenerate_queue(qname): (re)create every generated function of the queue and of its
-- consumers from the catalog. Called by create_queue, create/drop_consumer, create/drop_trigger.
CREATE FUNCTION mbus.regenerate_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $gen$
DECLARE
    q          text := regenerate_queue.qname;
    tbl        text := 'q_' || regenerate_queue.qname;
    chan       text := 'mbus_q_' || regenerate_queue.qname;
    v_fanout   text := '';
    v_fanoutn  text := '';
    v_triggers text := '';
    v_trign    text := '';
    v_fire     text := '0';
    r          record;
    ret_cols   text := format(
        'q.id AS id, coalesce(q.iid, %L || q.id || ''@'' || v_db) AS iid, '
        'q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, '
        'coalesce(q.headers, jsonb_build_object(''enqueue_time'', q.added) '
        '|| (SELECT jsonb_build_object(''seenby'', jsonb_build_array(v_db), '
        '''source_db'', v_db, ''destination'', %L))) '
        'AS headers, q.properties AS properties, q.data AS data, '
        'q.consume_after AS consume_after, q.attempts AS attempts',
        regenerate_queue.qname || '.', regenerate_queue.qname);
BEGIN
    -- Fan-out: one INSERT per consumer, guarded by its selector (t is the message).
    FOR r IN SELECT c.cid, c.selector FROM mbus.consumer AS c
             WHERE c.qname = q ORDER BY c.cid LOOP
        v_fanout := v_fanout || format($t$
    %s INSERT INTO mbus.%I (c, vt, id, iid, added, delayed_until, expires, headers, properties, data,
                           consume_after)
        VALUES (%s, v_vt, t.id, v_iid, t.added, t.delayed_until,
                t.expires, v_hdr, t.properties, t.data, t.consume_after);
    %s$t$,
            CASE WHEN r.selector IS NULL THEN '' ELSE format('IF (%s) THEN', r.selector) END,
            tbl, r.cid,
            CASE WHEN r.selector IS NULL THEN '' ELSE 'END IF;' END);
        v_fanoutn := v_fanoutn || format($t$,
    %s AS (
        INSERT INTO mbus.%I (c, vt, id, iid, added, delayed_until, expires, headers, properties,
                             data)
        SELECT %s, coalesce(t.delayed_until, t.added), t.id, NULL, t.added, t.delayed_until,
               t.expires, t.stored_headers, t.properties, t.data
        FROM m AS t WHERE %s)$t$,
            'i' || r.cid, tbl, r.cid, coalesce('(' || r.selector || ')', 'true'));
    END LOOP;

    -- Triggers: copy to the destination queue through its own post function.
    FOR r IN SELECT tr.dst, tr.selector FROM mbus.queue_trigger AS tr
             WHERE tr.src = q ORDER BY tr.dst LOOP
        v_triggers := v_triggers || format($t$
    IF (%s) THEN
        PERFORM mbus.%I(t.data, t.headers, t.properties, t.delayed_until, t.expires);
    END IF;$t$, coalesce(r.selector, 'true'), 'post_' || r.dst);
        v_trign := v_trign || format($t$,
    %s AS (
        SELECT count(mbus.%I(t.data, t.headers, t.properties, t.delayed_until, t.expires)) AS n
        FROM m AS t WHERE %s)$t$,
            'g_' || r.dst, 'post_' || r.dst, coalesce('(' || r.selector || ')', 'true'));
        v_fire := v_fire || format(' + (SELECT %I.n FROM %I)', 'g_' || r.dst, 'g_' || r.dst);
    END LOOP;

    -- consume_after (part two): a message whose dependencies still exist waits (vt infinity).
    v_fanout := format($t$
    DECLARE
        v_vt timestamptz := coalesce(t.delayed_until, t.added);
    BEGIN
    IF headers IS NOT NULL AND headers ? 'consume_after' THEN
        t.consume_after := mbus.dep_list(headers -> 'consume_after');
        IF mbus.await_deps(%L, t.id, t.iid, t.consume_after) THEN
            v_vt := 'infinity';
        END IF;
    END IF;$t$, q) || v_fanout || $t$
    END;$t$;

    -- post_<q>: the seed's signature; returns the iid.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(
    data jsonb, headers jsonb DEFAULT NULL, properties jsonb DEFAULT NULL,
    delayed_until timestamptz DEFAULT NULL, expires timestamptz DEFAULT NULL, iid text DEFAULT NULL)
RETURNS text LANGUAGE plpgsql VOLATILE AS %L$f$,
        'post_' || q, format($b$
DECLARE
    t     mbus.qt_model;
    v_iid text;   -- stored iid: NULL when it is this queue's own '<q>.<id>@<db>'
    v_hdr jsonb;  -- stored headers: NULL when they are the default ones
BEGIN
    IF data IS NULL OR jsonb_typeof(data) <> 'object' THEN
        PERFORM mbus.check_payload('data', data, false);
    END IF;
    IF headers IS NOT NULL OR properties IS NOT NULL THEN
        PERFORM mbus.check_payload('headers', headers);
        PERFORM mbus.check_payload('properties', properties);
    END IF;
    t.id := CASE WHEN iid IS NOT NULL THEN mbus.iid_id(iid, %L) END;
    IF t.id IS NULL THEN
        t.id := nextval('mbus.msg_id_seq');
        v_iid := iid;
    END IF;
    t.iid := coalesce(v_iid, %L || t.id || '@' || current_database());
    t.added := now();
    t.delayed_until := delayed_until;
    t.expires := expires;
    IF headers IS NULL THEN
        t.headers := jsonb_build_object('seenby', jsonb_build_array(current_database()),
                                        'source_db', current_database(), 'destination', %L,
                                        'enqueue_time', t.added);
    ELSE
        t.headers := mbus.stamp_headers(headers, %L, t.added);
        v_hdr := t.headers;
    END IF;
    t.properties := properties;
    t.data := data;
    t.attempts := 0;
%s
%s
    IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = %L) THEN
        PERFORM pg_notify(%L, %L);
    END IF;
    RETURN t.iid;
END;
$b$, q, q || '.', q, q, v_fanout, v_triggers, q, chan, q));

    -- postn_<q>: many messages in one statement (one INSERT per consumer in data-modifying
    -- CTEs over the same numbered messages m); returns their iids in the order of data.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(
    data jsonb[], headers jsonb[] DEFAULT NULL, properties jsonb[] DEFAULT NULL,
    delayed_until timestamptz DEFAULT NULL, expires timestamptz DEFAULT NULL)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS %L$f$,
        'postn_' || q, format($b$
DECLARE
    v_now timestamptz := now();
    v_db  text := current_database();
    v_h   jsonb;
BEGIN
    IF data IS NULL OR cardinality(data) = 0 THEN
        RETURN;
    END IF;
    IF headers IS NOT NULL AND cardinality(headers) <> cardinality(data)
       OR properties IS NOT NULL AND cardinality(properties) <> cardinality(data) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'headers and properties must have as many elements as data';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(data) AS d(v) WHERE v IS NULL OR jsonb_typeof(v) <> 'object')
       OR EXISTS (SELECT 1 FROM unnest(headers) AS d(v) WHERE jsonb_typeof(v) <> 'object')
       OR EXISTS (SELECT 1 FROM unnest(properties) AS d(v) WHERE jsonb_typeof(v) <> 'object') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = 'every data, headers and properties element must be a JSON object';
    END IF;
    IF headers IS NOT NULL
       AND EXISTS (SELECT 1 FROM unnest(headers) AS d(v) WHERE v ? 'consume_after') THEN
        RETURN QUERY SELECT mbus.post_each(%L, data, headers, properties, delayed_until, expires);
        RETURN;
    END IF;
    v_h := jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db,
                              'destination', %L, 'enqueue_time', v_now);
    IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = %L) THEN
        PERFORM pg_notify(%L, %L);
    END IF;
    RETURN QUERY
    WITH m AS MATERIALIZED (
        SELECT u.id, %L || u.id || '@' || v_db AS iid, v_now AS added,
               delayed_until AS delayed_until, expires AS expires,
               coalesce(u.sh, v_h) AS headers, u.sh AS stored_headers,
               u.p AS properties, u.d AS data, NULL::text[] AS consume_after, 0 AS attempts,
               NULL::uuid AS lease_token, NULL::timestamptz AS lease_until, u.ord
        FROM (SELECT nextval('mbus.msg_id_seq') AS id, x.d, x.h, x.p, x.ord,
                     CASE WHEN x.h IS NOT NULL THEN mbus.stamp_headers(x.h, %L, v_now) END AS sh
              FROM unnest(data, headers, properties) WITH ORDINALITY AS x(d, h, p, ord)) AS u)%s%s
    SELECT m.iid FROM m, (SELECT %s AS n) AS fired WHERE fired.n IS NOT NULL ORDER BY m.ord;
END;
$b$, q, q, q, chan, q, q || '.', q, v_fanoutn, v_trign, v_fire));

    -- peek_<q>(msgid): is there a message with that iid (any message when NULL)?
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(msgid text DEFAULT NULL)
RETURNS boolean LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS %L$f$,
        'peek_' || q, format($b$
DECLARE
    v_id bigint := mbus.iid_id(msgid, %2$L);
BEGIN
    IF msgid IS NULL THEN
        RETURN EXISTS (SELECT 1 FROM mbus.%1$I);
    ELSIF v_id IS NOT NULL THEN
        RETURN EXISTS (SELECT 1 FROM mbus.%1$I AS q WHERE q.id = v_id AND q.iid IS NULL);
    END IF;
    RETURN EXISTS (SELECT 1 FROM mbus.%1$I AS q WHERE q.iid = msgid);
END;
$b$, tbl, q));

    -- clear_queue_<q>(p_now): delete expired deliveries; returns how many.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(p_now timestamptz DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS %L$f$,
        'clear_queue_' || q, format($b$
DECLARE
    v_count bigint;
BEGIN
    DELETE FROM mbus.%I AS q WHERE q.expires <= coalesce(p_now, clock_timestamp());
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$b$, tbl));

    -- take_<q>(msgid): take the message with that iid away from every consumer (mbus.take).
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(msgid text, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS %L$f$,
        'take_' || q, format($b$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_db  text := current_database();
    v_id  bigint := mbus.iid_id(msgid, %3$L);
BEGIN
    IF v_id IS NOT NULL THEN
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.%1$I AS q
            WHERE q.id = v_id AND q.iid IS NULL AND (q.expires IS NULL OR q.expires > v_now)
            RETURNING %2$s)
        SELECT DISTINCT ON (d.id) d.*, NULL::uuid, NULL::timestamptz FROM d ORDER BY d.id;
    ELSE
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.%1$I AS q
            WHERE q.iid = msgid AND (q.expires IS NULL OR q.expires > v_now)
            RETURNING %2$s)
        SELECT DISTINCT ON (d.id) d.*, NULL::uuid, NULL::timestamptz FROM d ORDER BY d.id;
    END IF;
END;
$b$, tbl, ret_cols, q));

    -- ack_<q>(token): the leased message is done; MB007 when the token no longer owns it.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(token uuid, p_now timestamptz DEFAULT NULL)
RETURNS void LANGUAGE plpgsql VOLATILE AS %L$f$,
        'ack_' || q, format($b$
BEGIN
    DELETE FROM mbus.%I AS q
    WHERE q.lease_token = token AND q.vt > coalesce(p_now, clock_timestamp());
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %%s on queue %%s is no longer held', token, %L);
    END IF;
END;
$b$, tbl, q));

    -- nack_<q>(token, delay): give the leased message back, visible again after delay.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(token uuid, delay interval DEFAULT '0'::interval,
                                   p_now timestamptz DEFAULT NULL)
RETURNS void LANGUAGE plpgsql VOLATILE AS %L$f$,
        'nack_' || q, format($b$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_db  text := current_database();
BEGIN
    IF delay IS NULL OR delay < '0'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'nack delay must be >= 0';
    END IF;
    UPDATE mbus.%I AS q SET vt = v_now + delay, lease_token = NULL
    WHERE q.lease_token = token AND q.vt > v_now;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %%s on queue %%s is no longer held', token, %L);
    END IF;
END;
$b$, tbl, q));

    -- extend_<q>(token, lease): the lease now ends lease after now; returns the new end.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(token uuid, lease interval, p_now timestamptz DEFAULT NULL)
RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS %L$f$,
        'extend_' || q, format($b$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_db  text := current_database();
    v_end timestamptz;
BEGIN
    IF lease IS NULL OR lease <= '0'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'lease must be > 0';
    END IF;
    UPDATE mbus.%I AS q SET vt = v_now + lease
    WHERE q.lease_token = token AND q.vt > v_now
    RETURNING q.vt INTO v_end;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %%s on queue %%s is no longer held', token, %L);
    END IF;
    RETURN v_end;
END;
$b$, tbl, q));

    -- bury_<q>(token, reason): move the leased message to mbus.dmq with the reason.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(token uuid, reason text, p_now timestamptz DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS %L$f$,
        'bury_' || q, format($b$
DECLARE
    v_id bigint;
    v_db text := current_database();
BEGIN
    WITH d AS (
        DELETE FROM mbus.%I AS q
        WHERE q.lease_token = token AND q.vt > coalesce(p_now, clock_timestamp())
        RETURNING q.c AS c, %s)
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                          properties, data, consume_after, attempts, reason)
    SELECT %L, c.cname, d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers,
           d.properties, d.data, d.consume_after, d.attempts, coalesce(reason, 'buried')
    FROM d LEFT JOIN mbus.consumer AS c ON c.cid = d.c
    RETURNING dmq_id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %%s on queue %%s is no longer held', token, %L);
    END IF;
    RETURN v_id;
END;
$b$, tbl, ret_cols, q, q));

    -- Per consumer: consume, consumen, lease, take_from.
    FOR r IN SELECT c.cid, c.cname FROM mbus.consumer AS c WHERE c.qname = q LOOP
        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(amt integer, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            format('consumen_%s_by_%s', q, r.cname), format($b$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_db  text := current_database();
BEGIN
    IF amt IS NULL OR amt < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'amt must be a non-negative integer';
    END IF;
    -- The TID scan deletes in physical order: sort the claimed rows back into claim order.
    RETURN QUERY
    WITH d AS (
        DELETE FROM mbus.%1$I AS q
        WHERE q.ctid = ANY (ARRAY(
            SELECT s.ctid FROM mbus.%1$I AS s
            WHERE s.c = %2$s AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)
            ORDER BY s.vt, s.id
            LIMIT amt
            FOR UPDATE SKIP LOCKED))
        RETURNING q.vt AS claim_vt, %3$s)
    SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties, d.data,
           d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
    FROM d ORDER BY d.claim_vt, d.id;
END;
$b$, tbl, r.cid, ret_cols));

        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            format('consume_%s_by_%s', q, r.cname), format($b$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_db  text := current_database();
BEGIN
    RETURN QUERY
    DELETE FROM mbus.%1$I AS q
    WHERE q.ctid = ANY (ARRAY(
        SELECT s.ctid FROM mbus.%1$I AS s
        WHERE s.c = %2$s AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)
        ORDER BY s.vt, s.id
        LIMIT 1
        FOR UPDATE SKIP LOCKED))
    RETURNING %3$s, NULL::uuid, NULL::timestamptz;
END;
$b$, tbl, r.cid, ret_cols));

        -- lease_<q>_by_<c>: claim up to amt with a visibility timeout; a message already
        -- delivered max_attempts times goes to the dmq instead of being returned.
        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(amt integer, lease interval, max_attempts integer DEFAULT NULL,
                                   p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            format('lease_%s_by_%s', q, r.cname), format($b$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    v_db  text := current_database();
BEGIN
    IF amt IS NULL OR amt < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'amt must be a non-negative integer';
    END IF;
    IF lease IS NULL OR lease <= '0'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'lease must be > 0';
    END IF;
    IF max_attempts IS NOT NULL AND max_attempts < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'max_attempts must be >= 1';
    END IF;
    RETURN QUERY
    WITH s AS (
        SELECT s.ctid AS tid, s.attempts >= coalesce(max_attempts, 2147483647) AS dead
        FROM mbus.%1$I AS s
        WHERE s.c = %2$s AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)
        ORDER BY s.vt, s.id
        LIMIT amt
        FOR UPDATE SKIP LOCKED),
    gone AS (
        DELETE FROM mbus.%1$I AS q WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead))
        RETURNING %3$s),
    buried AS (
        INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                              properties, data, consume_after, attempts, reason)
        SELECT %4$L, %5$L, g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
               g.properties, g.data, g.consume_after, g.attempts,
               format('max_attempts (%%s) exceeded', max_attempts)
        FROM gone AS g)
    UPDATE mbus.%1$I AS q
    SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
    WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead))
    RETURNING %3$s, q.lease_token, q.vt;
END;
$b$, tbl, r.cid, ret_cols, q, r.cname));

        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(msgid text, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS %L$f$,
            format('take_from_%s_by_%s', q, r.cname), format($b$
DECLARE
    v_id bigint := mbus.iid_id(msgid, %4$L);
    v_db text := current_database();
BEGIN
    -- A plain DELETE waits for a transaction that holds the row (the seed: take blocks).
    IF v_id IS NOT NULL THEN
        RETURN QUERY
        DELETE FROM mbus.%1$I AS q
        WHERE q.c = %2$s AND q.id = v_id AND q.iid IS NULL
          AND (q.expires IS NULL OR q.expires > coalesce(p_now, clock_timestamp()))
        RETURNING %3$s, NULL::uuid, NULL::timestamptz;
    ELSE
        RETURN QUERY
        DELETE FROM mbus.%1$I AS q
        WHERE q.c = %2$s AND q.iid = msgid
          AND (q.expires IS NULL OR q.expires > coalesce(p_now, clock_timestamp()))
        RETURNING %3$s, NULL::uuid, NULL::timestamptz;
    END IF;
END;
$b$, tbl, r.cid, ret_cols, q));
    END LOOP;
    PERFORM mbus.secure_queue(q);
END;
$gen$;

-- consumer_functions(qname, cname): the names of the functions generated for one consumer.
CREATE FUNCTION mbus.consumer_functions(qname text, cname text)
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT ARRAY[format('consume_%s_by_%s', qname, cname), format('consumen_%s_by_%s', qname, cname),
                 format('lease_%s_by_%s', qname, cname), format('take_from_%s_by_%s', qname, cname)];
$$;

-- create_queue(qname, ncons, is_roles_security_model): create the queue, its delivery table
-- and its 'default' consumer; on an existing queue regenerate its functions (the seed's rule).
-- ncons is kept for the seed's signature but unused (see mbus.queue.ncons).
CREATE FUNCTION mbus.create_queue(qname text, ncons integer DEFAULT 1,
                                  is_roles_security_model boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    tbl text := 'q_' || qname;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    IF ncons IS NULL OR ncons < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'ncons must be a positive integer';
    END IF;
    -- Serialize catalog changes of queues (create/drop/consumers/triggers).
    PERFORM pg_advisory_xact_lock(1835165041);
    IF EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = create_queue.qname) THEN
        UPDATE mbus.queue AS q SET ncons = create_queue.ncons WHERE q.qname = create_queue.qname;
        PERFORM mbus.regenerate_queue(qname);
        RETURN;
    END IF;
    INSERT INTO mbus.queue (qname, ncons, roles_security)
    VALUES (qname, ncons, coalesce(is_roles_security_model, false));
    EXECUTE format($t$
CREATE TABLE mbus.%I (
    c             integer NOT NULL,
    vt            timestamptz NOT NULL,
    id            bigint NOT NULL,
    iid           text,
    added         timestamptz NOT NULL,
    delayed_until timestamptz,
    expires       timestamptz,
    headers       jsonb,
    properties    jsonb,
    data          jsonb NOT NULL,
    consume_after text[],
    attempts      integer NOT NULL DEFAULT 0,
    lease_token   uuid,
    waited        boolean NOT NULL DEFAULT false
)$t$, tbl);
    EXECUTE format('CREATE INDEX %I ON mbus.%I (c, vt, id)', tbl || '_claim', tbl);
    EXECUTE format('CREATE INDEX %I ON mbus.%I (id)', tbl || '_id', tbl);
    EXECUTE format('CREATE INDEX %I ON mbus.%I (iid) WHERE iid IS NOT NULL', tbl || '_iid', tbl);
    EXECUTE format('CREATE UNIQUE INDEX %I ON mbus.%I (lease_token) WHERE lease_token IS NOT NULL',
                   tbl || '_lease', tbl);
    EXECUTE format('CREATE INDEX %I ON mbus.%I (expires) WHERE expires IS NOT NULL',
                   tbl || '_expires', tbl);
    EXECUTE format('COMMENT ON TABLE mbus.%I IS %L', tbl,
                   format('deliveries of queue %s: one row per (message, consumer)', qname));
    INSERT INTO mbus.consumer (qname, cname, selector) VALUES (qname, 'default', NULL);
    PERFORM mbus.queue_created(qname);
    PERFORM mbus.regenerate_queue(qname);
END;
$$;

-- drop_queue(qname): drop the queue, its consumers, triggers from and to it, and its functions.
-- Its dead messages stay in mbus.dmq.
CREATE FUNCTION mbus.drop_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r      record;
    f      text;
    v_srcs text[];
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_queue(qname);
    SELECT array_agg(tr.src) INTO v_srcs FROM mbus.queue_trigger AS tr WHERE tr.dst = qname;
    DELETE FROM mbus.queue_trigger AS tr WHERE tr.dst = qname OR tr.src = qname;
    FOR r IN SELECT c.cname FROM mbus.consumer AS c WHERE c.qname = drop_queue.qname LOOP
        FOREACH f IN ARRAY mbus.consumer_functions(qname, r.cname) LOOP
            EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f);
        END LOOP;
    END LOOP;
    FOREACH f IN ARRAY ARRAY['post_', 'postn_', 'peek_', 'clear_queue_', 'take_', 'ack_', 'nack_',
                             'extend_', 'bury_'] LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f || qname);
    END LOOP;
    PERFORM mbus.queue_dropping(qname);
    EXECUTE format('DROP TABLE mbus.%I', 'q_' || qname);
    DELETE FROM mbus.queue AS q WHERE q.qname = drop_queue.qname;
    PERFORM mbus.queue_dropped(qname);
    IF v_srcs IS NOT NULL THEN
        FOREACH f IN ARRAY v_srcs LOOP
            PERFORM mbus.regenerate_queue(f);
        END LOOP;
    END IF;
END;
$$;

-- create_consumer(qname, cname, selector, noindex): a durable consumer that receives every
-- message posted to qname after it was created for which selector holds (NULL: all).
-- noindex is the seed's flag for large queues; this storage needs no per-consumer index (each
-- consumer's rows are its own), so nothing is built either way and noindex only says so.
CREATE FUNCTION mbus.create_consumer(qname text, cname text, selector text DEFAULT NULL,
                                     noindex boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_queue(qname);
    PERFORM mbus.check_name('consumer', cname, 24);
    IF EXISTS (SELECT 1 FROM mbus.consumer AS c
               WHERE c.cname = create_consumer.cname
                 AND (c.cname <> 'default' OR c.qname = create_consumer.qname)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = format('consumer %L exists already (consumer names are unique)', cname);
    END IF;
    PERFORM mbus.check_selector(selector);
    INSERT INTO mbus.consumer (qname, cname, selector, noindex)
    VALUES (qname, cname, selector, coalesce(noindex, false));
    PERFORM mbus.consumer_role(qname, cname, true);
    PERFORM mbus.regenerate_queue(qname);
    IF noindex THEN
        RAISE NOTICE USING MESSAGE = format(
            'consumer %s: no index needed; its deliveries are served by %s (c, vt, id)',
            cname, quote_ident('q_' || qname || '_claim'));
    END IF;
END;
$$;

-- drop_consumer(qname, cname): drop the consumer, its pending deliveries and its functions.
CREATE FUNCTION mbus.drop_consumer(qname text, cname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cid integer;
    f     text;
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_consumer(qname, cname);
    DELETE FROM mbus.consumer AS c
    WHERE c.qname = drop_consumer.qname AND c.cname = drop_consumer.cname
    RETURNING c.cid INTO v_cid;
    EXECUTE format('DELETE FROM mbus.%I WHERE c = $1', 'q_' || qname) USING v_cid;
    FOREACH f IN ARRAY mbus.consumer_functions(qname, cname) LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS mbus.%I', f);
    END LOOP;
    PERFORM mbus.consumer_role(qname, cname, false);
    PERFORM mbus.regenerate_queue(qname);
END;
$$;

-- create_trigger(src, dst, selector): copy every message posted to src into dst when selector
-- holds. The copy gets a new iid of dst and keeps source_db, enqueue_time and seenby.
CREATE FUNCTION mbus.create_trigger(src_queue_name text, dst_queue_name text,
                                    selector text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    PERFORM mbus.require_queue(src_queue_name);
    PERFORM mbus.require_queue(dst_queue_name);
    IF src_queue_name = dst_queue_name THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'a trigger cannot copy a queue into itself';
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.queue_trigger AS tr
               WHERE tr.src = src_queue_name AND tr.dst = dst_queue_name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003',
            MESSAGE = format('trigger %s -> %s exists already', src_queue_name, dst_queue_name);
    END IF;
    -- Refuse cycles: a message would be copied forever.
    IF EXISTS (
        WITH RECURSIVE reach(q) AS (
            SELECT dst_queue_name
            UNION
            SELECT tr.dst FROM mbus.queue_trigger AS tr JOIN reach ON tr.src = reach.q)
        SELECT 1 FROM reach WHERE reach.q = src_queue_name) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('trigger %s -> %s would make a cycle', src_queue_name, dst_queue_name);
    END IF;
    PERFORM mbus.check_selector(selector);
    INSERT INTO mbus.queue_trigger (src, dst, selector)
    VALUES (src_queue_name, dst_queue_name, selector);
    PERFORM mbus.regenerate_queue(src_queue_name);
END;
$$;

-- drop_trigger(src, dst).
CREATE FUNCTION mbus.drop_trigger(src_queue_name text, dst_queue_name text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(1835165041);
    DELETE FROM mbus.queue_trigger AS tr
    WHERE tr.src = src_queue_name AND tr.dst = dst_queue_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('trigger %s -> %s does not exist', src_queue_name, dst_queue_name);
    END IF;
    PERFORM mbus.regenerate_queue(src_queue_name);
END;
$$;

-- ---------------------------------------------------------------------------------------------
-- Generic entry points: check the names, then call the generated function (one EXECUTE).

-- post(qname, data, ...): the seed's generic post; returns nothing.
CREATE FUNCTION mbus.post(qname text, data jsonb, headers jsonb DEFAULT NULL,
                          properties jsonb DEFAULT NULL, delayed_until timestamptz DEFAULT NULL,
                          expires timestamptz DEFAULT NULL, iid text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5, $6)', 'post_' || qname)
    USING data, headers, properties, delayed_until, expires, iid;
END;
$$;

-- post_batch(qname, data[], headers[], properties[], delayed_until, expires): many messages in
-- one call; returns their iids in the order of data.
CREATE FUNCTION mbus.post_batch(qname text, data jsonb[], headers jsonb[] DEFAULT NULL,
                                properties jsonb[] DEFAULT NULL,
                                delayed_until timestamptz DEFAULT NULL,
                                expires timestamptz DEFAULT NULL)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2, $3, $4, $5)', 'postn_' || qname)
    USING data, headers, properties, delayed_until, expires;
END;
$$;

-- consume(qname[, cname]): at most one message for the consumer (default: 'default'),
-- removed when the caller's transaction commits.
CREATE FUNCTION mbus.consume(qname text, cname text DEFAULT 'default', p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)', format('consume_%s_by_%s', qname, cname))
    USING p_now;
END;
$$;

-- consumen(qname, cname, amt): at most amt messages, transactional style.
CREATE FUNCTION mbus.consumen(qname text, cname text, amt integer, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2)', format('consumen_%s_by_%s', qname, cname))
    USING amt, p_now;
END;
$$;

-- consume_lease(qname, cname, amt, lease, max_attempts): lease style claim (see lease_<q>_by_<c>).
CREATE FUNCTION mbus.consume_lease(qname text, cname text, amt integer DEFAULT 1,
                                   lease interval DEFAULT '30 seconds',
                                   max_attempts integer DEFAULT NULL,
                                   p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1, $2, $3, $4)', format('lease_%s_by_%s', qname, cname))
    USING amt, lease, max_attempts, p_now;
END;
$$;

CREATE FUNCTION mbus.ack(qname text, token uuid, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2)', 'ack_' || qname) USING token, p_now;
END;
$$;

CREATE FUNCTION mbus.nack(qname text, token uuid, delay interval DEFAULT '0'::interval,
                          p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)', 'nack_' || qname) USING token, delay, p_now;
END;
$$;

CREATE FUNCTION mbus.extend(qname text, token uuid, lease interval, p_now timestamptz DEFAULT NULL)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_end timestamptz;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)', 'extend_' || qname) INTO v_end USING token, lease, p_now;
    RETURN v_end;
END;
$$;

CREATE FUNCTION mbus.bury(qname text, token uuid, reason text, p_now timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, $3)', 'bury_' || qname) INTO v_id USING token, reason, p_now;
    RETURN v_id;
END;
$$;

-- take(iid): take the message with that iid from the queue its iid names, for every consumer;
-- waits while another transaction holds it. Empty when it is not there (or was posted to a
-- queue other than the one its iid was made for, as the seed warns).
CREATE FUNCTION mbus.take(iid text)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text := mbus.queue_of_iid(iid);
BEGIN
    IF v_q IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('%L is not an mbus iid', iid);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = v_q) THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)', 'take_' || v_q) USING iid;
END;
$$;

CREATE FUNCTION mbus.take_from(qname text, cname text, iid text)
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    RETURN QUERY EXECUTE format('SELECT * FROM mbus.%I($1)', format('take_from_%s_by_%s', qname, cname))
    USING iid;
END;
$$;

CREATE FUNCTION mbus.peek(qname text, msgid text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v boolean;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1)', 'peek_' || qname) INTO v USING msgid;
    RETURN v;
END;
$$;

CREATE FUNCTION mbus.clear_queue(qname text, p_now timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v bigint;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1)', 'clear_queue_' || qname) INTO v USING p_now;
    RETURN v;
END;
$$;

-- ---------------------------------------------------------------------------------------------
-- The dead-message queue.

-- post_dmq(qname, data, headers, properties, iid, reason, cname): put a message that cannot be
-- processed into mbus.dmq, keeping its old iid (the seed). Returns the dmq id.
CREATE FUNCTION mbus.post_dmq(qname text, data jsonb, headers jsonb DEFAULT NULL,
                              properties jsonb DEFAULT NULL, iid text DEFAULT NULL,
                              reason text DEFAULT 'cannot be processed', cname text DEFAULT NULL,
                              attempts integer DEFAULT 0)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    PERFORM mbus.check_payload('data', data, false);
    PERFORM mbus.check_payload('headers', headers);
    PERFORM mbus.check_payload('properties', properties);
    INSERT INTO mbus.dmq (qname, cname, iid, added, headers, properties, data, attempts, reason)
    VALUES (qname, cname, coalesce(iid, format('%s.%s@%s', qname, nextval('mbus.msg_id_seq'),
                                                  current_database())),
            now(), headers, properties, data, coalesce(attempts, 0),
            coalesce(reason, 'cannot be processed'))
    RETURNING dmq_id INTO v_id;
    RETURN v_id;
END;
$$;

-- to_dmq(msg, qname, reason, cname): the same for a row as consume returned it.
CREATE FUNCTION mbus.to_dmq(msg mbus.qt_model, qname text, reason text DEFAULT 'cannot be processed',
                            cname text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers, properties,
                          data, consume_after, attempts, reason)
    VALUES (qname, cname, msg.id, msg.iid, msg.added, msg.delayed_until, msg.expires, msg.headers,
            msg.properties, msg.data, msg.consume_after, coalesce(msg.attempts, 0),
            coalesce(reason, 'cannot be processed'))
    RETURNING dmq_id INTO v_id;
    RETURN v_id;
END;
$$;

-- dmq_replay(dmq_id, qname): put a dead message back, keeping its iid, and remove it from the
-- dmq. It goes to its consumer only when the dmq row names one that still exists (so other
-- consumers do not get it twice), else it is posted to the queue (qname overrides the queue,
-- and then it is always posted). Attempts start again from 0. Returns the iid.
CREATE FUNCTION mbus.dmq_replay(dmq_id bigint, qname text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    d     mbus.dmq;
    v_cid integer;
BEGIN
    DELETE FROM mbus.dmq AS x WHERE x.dmq_id = dmq_replay.dmq_id RETURNING x.* INTO d;
    IF d.dmq_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('dead message %s does not exist', dmq_id);
    END IF;
    IF qname IS NULL THEN
        SELECT c.cid INTO v_cid FROM mbus.consumer AS c WHERE c.qname = d.qname AND c.cname = d.cname;
    END IF;
    PERFORM mbus.require_queue(coalesce(qname, d.qname));
    IF v_cid IS NOT NULL THEN
        EXECUTE format($t$
            INSERT INTO mbus.%I (c, vt, id, iid, added, delayed_until, expires, headers,
                                 properties, data, consume_after, attempts)
            VALUES ($1, now(), coalesce(mbus.iid_id($3, $9), $2, nextval('mbus.msg_id_seq')),
                    CASE WHEN mbus.iid_id($3, $9) IS NULL THEN $3 END, now(), NULL, $4,
                    $5, $6, $7, $8, 0)$t$, 'q_' || d.qname)
        USING v_cid, d.id, d.iid, d.expires, d.headers, d.properties, d.data,
              d.consume_after, d.qname;
        PERFORM pg_notify('mbus_q_' || d.qname, d.qname);
    ELSE
        EXECUTE format('SELECT mbus.%I($1, $2, $3, NULL, $4, $5)', 'post_' || coalesce(qname, d.qname))
        USING d.data, d.headers, d.properties, d.expires, d.iid;
    END IF;
    RETURN d.iid;
END;
$$;

-- ---------------------------------------------------------------------------------------------
-- Metrics.

-- queue_stats(qname, p_now): per queue and consumer: depth (deliveries waiting), ready (can be
-- claimed now), delayed (not yet due), leased (under a live lease), expired (awaiting
-- clear_queue), the age of the oldest ready delivery, and dead messages of the queue (per
-- consumer when the dmq row names it). Reads the queue tables: cost grows with depth.
CREATE FUNCTION mbus.queue_stats(p_qname text DEFAULT NULL, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (qname text, cname text, depth bigint, ready bigint, delayed bigint, leased bigint,
               expired bigint, oldest_age interval, dmq bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, clock_timestamp());
    r     record;
BEGIN
    FOR r IN SELECT q.qname AS q FROM mbus.queue AS q
             WHERE p_qname IS NULL OR q.qname = p_qname ORDER BY q.qname LOOP
        RETURN QUERY EXECUTE format($t$
            SELECT $1, c.cname,
                   count(d.c),
                   count(d.c) FILTER (WHERE d.vt <= $2 AND (d.expires IS NULL OR d.expires > $2)),
                   count(d.c) FILTER (WHERE d.vt > $2 AND d.lease_token IS NULL),
                   count(d.c) FILTER (WHERE d.vt > $2 AND d.lease_token IS NOT NULL),
                   count(d.c) FILTER (WHERE d.expires <= $2),
                   $2 - min(d.vt) FILTER (WHERE d.vt <= $2 AND (d.expires IS NULL OR d.expires > $2)),
                   (SELECT count(*) FROM mbus.dmq AS x WHERE x.qname = $1 AND x.cname = c.cname)
            FROM mbus.consumer AS c LEFT JOIN mbus.%I AS d ON d.c = c.cid
            WHERE c.qname = $1
            GROUP BY c.cid, c.cname ORDER BY c.cname$t$, 'q_' || r.q)
        USING r.q, v_now;
    END LOOP;
END;
$$;

CREATE VIEW mbus.queue_metrics AS SELECT * FROM mbus.queue_stats();

COMMENT ON VIEW mbus.queue_metrics IS 'mbus.queue_stats() for every queue and consumer, now.';

-- The queues with their consumers and triggers.
CREATE VIEW mbus.queues AS
SELECT q.qname, q.ncons, q.roles_security, q.created_at,
       coalesce((SELECT array_agg(c.cname ORDER BY c.cname) FROM mbus.consumer AS c
                 WHERE c.qname = q.qname), '{}') AS consumers,
       coalesce((SELECT array_agg(tr.dst ORDER BY tr.dst) FROM mbus.queue_trigger AS tr
                 WHERE tr.src = q.qname), '{}') AS triggers_to
FROM mbus.queue AS q;

-- =============================================================================================
-- Part two: message dependencies (consume_after), temporary queues and consumers, the roles
-- security model, views, sagas. docs/queues-part2.md states the rules and guarantees.
-- =============================================================================================

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

-- dep_list(value): consume_after as text[] (a JSON array of iids, or one iid); NULL if empty.
CREATE FUNCTION mbus.dep_list(value jsonb)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF value IS NULL OR jsonb_typeof(value) = 'null' THEN
        RETURN NULL;
    ELSIF jsonb_typeof(value) = 'string' THEN
        RETURN ARRAY[value #>> '{}'];
    ELSIF jsonb_typeof(value) = 'array'
          AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(value) AS e(v)
                          WHERE jsonb_typeof(e.v) <> 'string') THEN
        RETURN nullif(ARRAY(SELECT DISTINCT e.v FROM jsonb_array_elements_text(value) AS e(v)
                            ORDER BY e.v), '{}');
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'MB005',
        MESSAGE = 'headers.consume_after must be an iid or a JSON array of iids';
END;
$$;

-- dep_rows(iid): the delivery table and the WHERE condition (on alias q, $1 = iid) that find
-- the deliveries of iid in the queue its iid names; NULL when there is no such queue.
CREATE FUNCTION mbus.dep_rows(iid text, OUT tbl text, OUT cond text)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text := mbus.queue_of_iid(iid);
BEGIN
    IF v_q IS NULL OR NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = v_q) THEN
        RETURN;
    END IF;
    tbl := 'q_' || v_q;
    cond := CASE WHEN mbus.iid_id(iid, v_q) IS NOT NULL
                 THEN format('q.id = %s AND q.iid IS NULL', mbus.iid_id(iid, v_q))
                 ELSE 'q.iid = $1' END;
END;
$$;

-- await_deps(qname, id, iid, deps): called by post_<qname> for a message with consume_after.
-- Locks and marks the deliveries of every dependency that still exists (an UPDATE: a consume
-- of it in progress is waited for, then seen gone), records the edges, and returns true when
-- the message must wait.
CREATE FUNCTION mbus.await_deps(qname text, id bigint, iid text, deps text[])
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    d      text;
    r      record;
    n      bigint;
    v_new  bigint;
    v_left integer := 0;
BEGIN
    IF deps IS NULL THEN
        RETURN false;
    END IF;
    FOREACH d IN ARRAY deps LOOP
        CONTINUE WHEN d = iid;
        n := 0;
        r := mbus.dep_rows(d);
        IF r.tbl IS NOT NULL THEN
            -- FOR SHARE waits for a consume in progress; only unmarked rows are updated (many
            -- dependants of one message do not make a new row version each).
            EXECUTE format('SELECT count(*), count(*) FILTER (WHERE NOT x.waited) '
                           'FROM (SELECT q.waited FROM mbus.%I AS q WHERE %s FOR SHARE) AS x',
                           r.tbl, r.cond) INTO n, v_new USING d;
            IF v_new > 0 THEN
                EXECUTE format('UPDATE mbus.%I AS q SET waited = true WHERE %s AND NOT q.waited',
                               r.tbl, r.cond) USING d;
            END IF;
        END IF;
        IF n = 0 THEN
            PERFORM 1 FROM mbus.dmq AS x WHERE x.iid = d FOR KEY SHARE;
            CONTINUE WHEN NOT FOUND;
        END IF;
        INSERT INTO mbus.msg_dep (dep_iid, qname, id) VALUES (d, await_deps.qname, await_deps.id)
        ON CONFLICT DO NOTHING;
        v_left := v_left + 1;
    END LOOP;
    IF v_left = 0 THEN
        RETURN false;
    END IF;
    INSERT INTO mbus.msg_wait (qname, id, iid, pending) VALUES (qname, id, iid, v_left)
    ON CONFLICT ON CONSTRAINT msg_wait_pkey
    DO UPDATE SET pending = mbus.msg_wait.pending + excluded.pending;
    RETURN true;
END;
$$;

-- release_deps(iid): run at commit by the transaction that removed a delivery of iid (or a
-- dmq row). When iid exists nowhere any more, every message waiting on it has one dependency
-- less; those with none left become claimable (exactly once: the count is decremented under
-- the row lock of msg_wait, so two transactions releasing a message's last two dependencies
-- serialize and only the second sees 0). Transactions that remove different deliveries of the
-- same iid serialize on an advisory lock taken here and held to commit, so the last one sees
-- the others' deletes. Needs READ COMMITTED (the check must see commits made after the
-- transaction began); other isolation levels get MB008 instead of a wrong answer.
CREATE FUNCTION mbus.release_deps(iid text)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r        record;
    w        record;
    v_exists boolean;
    v_left   integer;
    v_freed  integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mbus.msg_dep AS d WHERE d.dep_iid = release_deps.iid) THEN
        RETURN 0;
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('message %s has dependants; consume it in a READ COMMITTED transaction', iid);
    END IF;
    PERFORM pg_advisory_xact_lock(1835165042, hashtext(iid));
    r := mbus.dep_rows(iid);
    IF r.tbl IS NOT NULL THEN
        -- Copies put back since (dmq replay, a re-post with the old iid) get marked, so their
        -- consume releases later; then: is any copy left?
        EXECUTE format('UPDATE mbus.%I AS q SET waited = true WHERE %s AND NOT q.waited', r.tbl, r.cond)
        USING iid;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM mbus.%I AS q WHERE %s)', r.tbl, r.cond)
        INTO v_exists USING iid;
        IF v_exists THEN
            RETURN 0;
        END IF;
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.dmq AS x WHERE x.iid = release_deps.iid) THEN
        RETURN 0;  -- a dead dependency keeps blocking until replayed and consumed, or deleted
    END IF;
    FOR w IN DELETE FROM mbus.msg_dep AS d WHERE d.dep_iid = release_deps.iid
             RETURNING d.qname, d.id LOOP
        UPDATE mbus.msg_wait AS m SET pending = m.pending - 1
        WHERE m.qname = w.qname AND m.id = w.id
        RETURNING m.pending INTO v_left;
        CONTINUE WHEN v_left IS DISTINCT FROM 0;
        DELETE FROM mbus.msg_wait AS m WHERE m.qname = w.qname AND m.id = w.id;
        IF EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = w.qname) THEN
            EXECUTE format($t$UPDATE mbus.%I AS q SET vt = coalesce(q.delayed_until, q.added)
                            WHERE q.id = $1 AND q.vt = 'infinity'$t$, 'q_' || w.qname)
            USING w.id;
            IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS x WHERE x.qname = w.qname) THEN
                PERFORM pg_notify('mbus_q_' || w.qname, w.qname);
            END IF;
            v_freed := v_freed + 1;
        END IF;
    END LOOP;
    RETURN v_freed;
END;
$$;

-- The deferred trigger of delivery tables (argument: the queue name) and of the dmq.
CREATE FUNCTION mbus.on_dep_gone()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF TG_TABLE_NAME = 'dmq' THEN
        PERFORM mbus.release_deps(OLD.iid);
    ELSE
        PERFORM mbus.release_deps(coalesce(OLD.iid, TG_ARGV[0] || '.' || OLD.id || '@' || current_database()));
    END IF;
    RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER dmq_dep_gone AFTER DELETE ON mbus.dmq
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION mbus.on_dep_gone();

-- post_each(qname, data[], headers[], properties[], delayed_until, expires): post one by one
-- through post_<qname> (postn_<qname> does so for messages with consume_after).
CREATE FUNCTION mbus.post_each(qname text, data jsonb[], headers jsonb[], properties jsonb[],
                               delayed_until timestamptz, expires timestamptz)
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    i     integer;
    v_iid text;
BEGIN
    FOR i IN 1 .. cardinality(data) LOOP
        EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5)', 'post_' || qname) INTO v_iid
        USING data[i], headers[i], properties[i], delayed_until, expires;
        RETURN NEXT v_iid;
    END LOOP;
END;
$$;

-- Messages waiting for dependencies, with the iids they still wait for.
CREATE VIEW mbus.waiting AS
SELECT w.qname, w.id, w.iid, w.pending, w.since,
       ARRAY(SELECT d.dep_iid FROM mbus.msg_dep AS d
             WHERE d.qname = w.qname AND d.id = w.id ORDER BY d.dep_iid) AS waits_for
FROM mbus.msg_wait AS w;

-- ---------------------------------------------------------------------------------------------
-- Roles (the seed): mbus_<db>_post_<q> and mbus_<db>_consume_<q>_by_<c> are created with
-- every queue and consumer, and dropped with them. Under is_roles_security_model the queue's
-- generated post/consume functions become SECURITY DEFINER (search_path pinned), are revoked
-- from PUBLIC and granted only to those roles: the EXECUTE privilege check on the caller's
-- current role is the role check.

-- queue_role(kind, qname, cname): the role name ('post' or 'consume').
CREATE FUNCTION mbus.queue_role(kind text, qname text, cname text DEFAULT NULL)
RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT CASE kind WHEN 'post' THEN format('mbus_%s_post_%s', current_database(), qname)
                     ELSE format('mbus_%s_consume_%s_by_%s', current_database(), qname, cname) END;
$$;

-- ensure_role(role, strict): create the NOLOGIN role (with the rights the generic entry points
-- need) unless it exists. A name over 63 bytes or missing CREATEROLE is an error when strict
-- (a roles-security queue), else a NOTICE.
CREATE FUNCTION mbus.ensure_role(role text, strict boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF octet_length(role) > 63 THEN
        IF strict THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('role name %s is longer than 63 bytes; use shorter names', role);
        END IF;
        RAISE NOTICE 'role % not created: longer than 63 bytes', role;
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = role) THEN
        RETURN;
    END IF;
    BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', role);
        EXECUTE format('GRANT USAGE ON SCHEMA mbus TO %I', role);
        EXECUTE format('GRANT SELECT ON mbus.queue, mbus.consumer TO %I', role);
        EXECUTE format('GRANT USAGE ON SEQUENCE mbus.msg_id_seq TO %I', role);
    EXCEPTION WHEN insufficient_privilege THEN
        IF strict THEN
            RAISE;
        END IF;
        RAISE NOTICE 'role % not created: %', role, SQLERRM;
    END;
END;
$$;

-- drop_role(role): drop a role made by ensure_role (its grants in this database first).
CREATE FUNCTION mbus.drop_role(role text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = role) THEN
        RETURN;
    END IF;
    BEGIN
        EXECUTE format('DROP OWNED BY %I', role);
        EXECUTE format('DROP ROLE %I', role);
    EXCEPTION WHEN insufficient_privilege OR dependent_objects_still_exist THEN
        RAISE NOTICE 'role % not dropped: %', role, SQLERRM;
    END;
END;
$$;

-- consumer_role(qname, cname, create): make or drop the consume role of a consumer.
CREATE FUNCTION mbus.consumer_role(qname text, cname text, make boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF make THEN
        PERFORM mbus.ensure_role(mbus.queue_role('consume', qname, cname),
                                 (SELECT q.roles_security FROM mbus.queue AS q
                                  WHERE q.qname = consumer_role.qname));
    ELSE
        PERFORM mbus.drop_role(mbus.queue_role('consume', qname, cname));
        DELETE FROM mbus.temp_object AS t
        WHERE t.kind = 'consumer' AND t.qname = consumer_role.qname AND t.cname = consumer_role.cname;
    END IF;
END;
$$;

-- queue_created(qname): what part two adds to a new queue: the dependency trigger and roles.
CREATE FUNCTION mbus.queue_created(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    EXECUTE format('CREATE CONSTRAINT TRIGGER dep_gone AFTER DELETE ON mbus.%I '
                   'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.waited) '
                   'EXECUTE FUNCTION mbus.on_dep_gone(%L)', 'q_' || qname, qname);
    PERFORM mbus.ensure_role(mbus.queue_role('post', qname),
                             (SELECT q.roles_security FROM mbus.queue AS q
                              WHERE q.qname = queue_created.qname));
    PERFORM mbus.consumer_role(qname, 'default', true);
END;
$$;

-- queue_dropping(qname): before the table goes: its views and temporary-object entries.
CREATE FUNCTION mbus.queue_dropping(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    r record;
BEGIN
    FOR r IN DELETE FROM mbus.queue_view AS v WHERE v.qname = queue_dropping.qname
             RETURNING v.view_schema, v.view_name LOOP
        EXECUTE format('DROP VIEW IF EXISTS %I.%I', r.view_schema, r.view_name);
    END LOOP;
    DELETE FROM mbus.temp_object AS t WHERE t.qname = queue_dropping.qname;
    -- Run the releases pending from consumes earlier in this transaction now: PostgreSQL does
    -- not drop a table with pending trigger events.
    SET CONSTRAINTS mbus.dep_gone IMMEDIATE;
    SET CONSTRAINTS mbus.dep_gone DEFERRED;
    PERFORM mbus.drop_role(mbus.queue_role('consume', queue_dropping.qname, c.cname))
    FROM mbus.consumer AS c WHERE c.qname = queue_dropping.qname;
END;
$$;

-- queue_dropped(qname): after the table went: its waiting messages are forgotten, messages
-- waiting on its messages are released (unless those are in the dmq), roles dropped.
CREATE FUNCTION mbus.queue_dropped(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    d text;
BEGIN
    DELETE FROM mbus.msg_dep AS x WHERE x.qname = queue_dropped.qname;
    DELETE FROM mbus.msg_wait AS x WHERE x.qname = queue_dropped.qname;
    FOR d IN SELECT DISTINCT x.dep_iid FROM mbus.msg_dep AS x
             WHERE mbus.queue_of_iid(x.dep_iid) = queue_dropped.qname LOOP
        PERFORM mbus.release_deps(d);
    END LOOP;
    PERFORM mbus.drop_role(mbus.queue_role('post', qname));
END;
$$;

-- secure_queue(qname): called at the end of every regeneration. Under the roles security
-- model: generated post/consume functions SECURITY DEFINER with a pinned search_path, EXECUTE
-- only for the queue's roles. Queues without it keep SECURITY INVOKER functions (no per-call
-- GUC cost) executable by their owner only.
CREATE FUNCTION mbus.secure_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_post text := mbus.queue_role('post', qname);
    r      record;
    f      text;
    v_fn   regprocedure;
BEGIN
    -- Per-schema default privileges cannot take back the global EXECUTE for PUBLIC, so every
    -- generated function is revoked explicitly.
    FOR v_fn IN
        SELECT p.oid::regprocedure FROM pg_proc AS p
        WHERE p.pronamespace = 'mbus'::regnamespace
          AND (p.proname = ANY (SELECT unnest(ARRAY['post_', 'postn_', 'peek_', 'clear_queue_',
                                                    'take_', 'ack_', 'nack_', 'extend_', 'bury_'])
                                       || secure_queue.qname)
               OR p.proname = ANY (SELECT unnest(mbus.consumer_functions(secure_queue.qname, c.cname))
                                   FROM mbus.consumer AS c WHERE c.qname = secure_queue.qname))
          AND (p.proacl IS NULL OR 0 = ANY (SELECT a.grantee FROM aclexplode(p.proacl) AS a))
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_fn);
    END LOOP;
    IF NOT (SELECT q.roles_security FROM mbus.queue AS q WHERE q.qname = secure_queue.qname) THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT x.fname, x.grantee
        FROM (SELECT unnest(ARRAY['post_', 'postn_', 'peek_']) || secure_queue.qname, v_post
              UNION ALL
              SELECT f2.p || secure_queue.qname,
                     mbus.queue_role('consume', secure_queue.qname, c.cname)
              FROM mbus.consumer AS c,
                   unnest(ARRAY['ack_', 'nack_', 'extend_', 'bury_', 'peek_']) AS f2(p)
              WHERE c.qname = secure_queue.qname
              UNION ALL
              SELECT unnest(mbus.consumer_functions(secure_queue.qname, c.cname)),
                     mbus.queue_role('consume', secure_queue.qname, c.cname)
              FROM mbus.consumer AS c WHERE c.qname = secure_queue.qname) AS x(fname, grantee)
    LOOP
        FOR v_fn IN SELECT p.oid::regprocedure FROM pg_proc AS p
                    WHERE p.pronamespace = 'mbus'::regnamespace AND p.proname = r.fname LOOP
            EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp',
                           v_fn);
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_fn);
            IF EXISTS (SELECT 1 FROM pg_roles AS x WHERE x.rolname = r.grantee) THEN
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', v_fn, r.grantee);
            END IF;
        END LOOP;
    END LOOP;
    FOREACH f IN ARRAY ARRAY['take_', 'clear_queue_'] LOOP
        FOR v_fn IN SELECT p.oid::regprocedure FROM pg_proc AS p
                    WHERE p.pronamespace = 'mbus'::regnamespace AND p.proname = f || qname LOOP
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_fn);
        END LOOP;
    END LOOP;
END;
$$;


-- ---------------------------------------------------------------------------------------------
-- Views: create_view(qname, viewname) makes a view whose INSERT posts to the queue; grants on
-- the view are all an unprivileged role needs. Reading it lists the queue's pending messages.
CREATE TABLE mbus.queue_view (
    view_schema text NOT NULL,
    view_name   text NOT NULL,
    qname       text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    PRIMARY KEY (view_schema, view_name)
);

-- The INSTEAD OF INSERT trigger of those views (argument: the queue name).
CREATE FUNCTION mbus.view_insert()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM mbus.require_queue(TG_ARGV[0]);
    EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5, $6)', 'post_' || TG_ARGV[0])
    INTO NEW.iid
    USING NEW.data, NEW.headers, NEW.properties, NEW.delayed_until, NEW.expires, NEW.iid;
    RETURN NEW;
END;
$$;

CREATE FUNCTION mbus.create_view(qname text, viewname text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_parts text[];
    v_schema text;
    v_name   text;
BEGIN
    PERFORM mbus.require_queue(qname);
    v_parts := parse_ident(coalesce(viewname, 'public.' || qname || '_q'));
    IF cardinality(v_parts) = 1 THEN
        v_schema := 'public';
        v_name := v_parts[1];
    ELSIF cardinality(v_parts) = 2 THEN
        v_schema := v_parts[1];
        v_name := v_parts[2];
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('bad view name %L', viewname);
    END IF;
    EXECUTE format($t$
CREATE VIEW %I.%I AS
SELECT DISTINCT ON (q.id) q.id, coalesce(q.iid, %L || q.id || '@' || current_database()) AS iid,
       q.added, q.delayed_until, q.expires, q.headers, q.properties, q.data
FROM mbus.%I AS q ORDER BY q.id$t$, v_schema, v_name, qname || '.', 'q_' || qname);
    EXECUTE format('CREATE TRIGGER post INSTEAD OF INSERT ON %I.%I FOR EACH ROW '
                   'EXECUTE FUNCTION mbus.view_insert(%L)', v_schema, v_name, qname);
    INSERT INTO mbus.queue_view (view_schema, view_name, qname) VALUES (v_schema, v_name, qname);
    RETURN format('%I.%I', v_schema, v_name);
END;
$$;

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

CREATE FUNCTION mbus.my_session(OUT pid integer, OUT backend_start timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT a.pid, a.backend_start FROM pg_stat_activity AS a WHERE a.pid = pg_backend_pid();
$$;

-- clear_tempq(): drop temporary queues and consumers whose session has ended; returns how many.
CREATE FUNCTION mbus.clear_tempq()
RETURNS integer
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r       record;
    v_count integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mbus.temp_object AS t
                   WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a
                                     WHERE a.pid = t.pid
                                       AND (a.backend_start = t.backend_start
                                            OR a.backend_start IS NULL))) THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock(1835165041);
    FOR r IN SELECT t.* FROM mbus.temp_object AS t
             WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a
                               WHERE a.pid = t.pid
                                       AND (a.backend_start = t.backend_start
                                            OR a.backend_start IS NULL))
             ORDER BY t.kind DESC LOOP
        IF r.kind = 'consumer' THEN
            IF EXISTS (SELECT 1 FROM mbus.consumer AS c WHERE c.qname = r.qname AND c.cname = r.cname) THEN
                PERFORM mbus.drop_consumer(r.qname, r.cname);
            END IF;
        ELSIF EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = r.qname) THEN
            PERFORM mbus.drop_queue(r.qname);
        END IF;
        DELETE FROM mbus.temp_object AS t
        WHERE t.kind = r.kind AND t.qname = r.qname AND t.cname = r.cname;
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;

-- create_temporary_queue(): a new queue 'tq_<n>' that lives as long as this session.
CREATE FUNCTION mbus.create_temporary_queue()
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text := 'tq_' || nextval('mbus.temp_seq');
    s   record := mbus.my_session();
BEGIN
    PERFORM mbus.clear_tempq();
    PERFORM mbus.create_queue(v_q, 1);
    INSERT INTO mbus.temp_object (kind, qname, pid, backend_start)
    VALUES ('queue', v_q, s.pid, s.backend_start);
    RETURN v_q;
END;
$$;

-- create_temporary_consumer(qname, selector): a consumer 'tc_<n>' of qname for this session.
CREATE FUNCTION mbus.create_temporary_consumer(qname text, selector text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_c text := 'tc_' || nextval('mbus.temp_seq');
    s   record := mbus.my_session();
BEGIN
    PERFORM mbus.clear_tempq();
    PERFORM mbus.create_consumer(qname, v_c, selector);
    INSERT INTO mbus.temp_object (kind, qname, cname, pid, backend_start)
    VALUES ('consumer', qname, v_c, s.pid, s.backend_start);
    RETURN v_c;
END;
$$;

-- consume_wait(qname, cname, timeout, poll): consume, waiting up to timeout for a message
-- (the seed: consuming from a temporary queue can block). Polls inside the call; clients
-- that can LISTEN (the Python Bus) wait on notifications instead.
CREATE FUNCTION mbus.consume_wait(qname text, cname text DEFAULT 'default',
                                  timeout interval DEFAULT '10 seconds',
                                  poll interval DEFAULT '20 milliseconds')
RETURNS SETOF mbus.qt_model
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_until timestamptz := clock_timestamp() + timeout;
    v_fn    text := format('consume_%s_by_%s', qname, cname);
    m       mbus.qt_model;
BEGIN
    PERFORM mbus.require_consumer(qname, cname);
    LOOP
        EXECUTE format('SELECT * FROM mbus.%I()', v_fn) INTO m;
        IF m.id IS NOT NULL THEN
            RETURN NEXT m;
            RETURN;
        END IF;
        EXIT WHEN clock_timestamp() >= v_until;
        PERFORM pg_sleep(extract(epoch FROM least(poll, v_until - clock_timestamp())));
    END LOOP;
END;
$$;

-- ---------------------------------------------------------------------------------------------
-- Sagas (the seed's pattern). saga_start posts, in the caller's transaction:
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

-- saga_queue(qname): make one of the saga service queues unless it exists.
CREATE FUNCTION mbus.saga_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = saga_queue.qname) THEN
        PERFORM mbus.create_queue(qname, 1);
    END IF;
END;
$$;

-- saga_post(qname, data, headers, delayed_until, iid): post through post_<qname>.
CREATE FUNCTION mbus.saga_post(qname text, data jsonb, headers jsonb,
                               delayed_until timestamptz DEFAULT NULL, iid text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v text;
BEGIN
    PERFORM mbus.require_queue(qname);
    EXECUTE format('SELECT mbus.%I($1, $2, NULL, $3, NULL, $4)', 'post_' || qname)
    INTO v USING data, headers, delayed_until, iid;
    RETURN v;
END;
$$;

-- saga_start(name, steps, data): start a saga; returns its id. steps is a JSON array, in an
-- order where every step comes after the steps it names:
--   [{"step": "room", "queue": "rooms", "after": [], "compensate": "cancel_rooms",
--     "data": {...}}, ...]
-- Every message carries data || {"saga_id", "step"} and headers.saga {id, step, bung,
-- compensation}.
CREATE FUNCTION mbus.saga_start(name text, steps jsonb, data jsonb DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_id    bigint;
    v_bung  text;
    v_final text;
    v_done  text;
    s       record;
    v_after text[];
    v_iid   text;
    v_fwd   text[] := '{}';
    v_comp  text[] := '{}';
    v_seen  jsonb := '{}';
BEGIN
    IF jsonb_typeof(steps) IS DISTINCT FROM 'array' OR jsonb_array_length(steps) = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'steps must be a non-empty JSON array';
    END IF;
    PERFORM mbus.check_payload('data', data);
    PERFORM mbus.saga_queue('mbus_saga_bung');
    PERFORM mbus.saga_queue('mbus_saga_final');
    PERFORM mbus.saga_queue('mbus_saga_done');
    v_bung := mbus.get_iid('mbus_saga_bung');
    v_final := mbus.get_iid('mbus_saga_final');
    v_done := mbus.get_iid('mbus_saga_done');
    INSERT INTO mbus.saga (name, data, bung_iid, final_iid, done_iid)
    VALUES (name, data, v_bung, v_final, v_done) RETURNING saga_id INTO v_id;
    FOR s IN SELECT e.value AS v, e.ord FROM jsonb_array_elements(steps) WITH ORDINALITY AS e(value, ord)
    LOOP
        IF jsonb_typeof(s.v -> 'step') IS DISTINCT FROM 'string'
           OR jsonb_typeof(s.v -> 'queue') IS DISTINCT FROM 'string' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'every step needs "step" and "queue"';
        END IF;
        IF v_seen ? (s.v ->> 'step') THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('step %s appears twice', s.v ->> 'step');
        END IF;
        SELECT coalesce(array_agg(v_seen ->> a.n), '{}') INTO v_after
        FROM jsonb_array_elements_text(coalesce(s.v -> 'after', '[]')) AS a(n);
        IF array_position(v_after, NULL) IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('step %s comes after a step not listed before it', s.v ->> 'step');
        END IF;
        v_iid := mbus.saga_post(
            s.v ->> 'queue',
            coalesce(s.v -> 'data', '{}') || jsonb_build_object('saga_id', v_id, 'step', s.v ->> 'step'),
            jsonb_build_object('consume_after', to_jsonb(v_after),
                               'saga', jsonb_build_object('id', v_id, 'step', s.v ->> 'step',
                                                          'bung', v_bung, 'compensation', false)));
        v_seen := v_seen || jsonb_build_object(s.v ->> 'step', v_iid);
        v_fwd := v_fwd || v_iid;
        INSERT INTO mbus.saga_step (saga_id, step, ord, qname, iid, after, comp_qname)
        VALUES (v_id, s.v ->> 'step', s.ord, s.v ->> 'queue', v_iid, v_after, s.v ->> 'compensate');
    END LOOP;
    -- The bung: consumable by nobody, taken by a rollback or by the final message.
    PERFORM mbus.saga_post('mbus_saga_bung',
        jsonb_build_object('saga_id', v_id, 'take', to_jsonb(v_fwd || v_final)),
        NULL, 'infinity', v_bung);
    FOR s IN SELECT st.step, st.comp_qname FROM mbus.saga_step AS st
             WHERE st.saga_id = v_id AND st.comp_qname IS NOT NULL ORDER BY st.ord LOOP
        v_iid := mbus.saga_post(
            s.comp_qname,
            coalesce((SELECT e.value -> 'data' FROM jsonb_array_elements(steps) AS e(value)
                      WHERE e.value ->> 'step' = s.step), '{}')
                || jsonb_build_object('saga_id', v_id, 'step', s.step),
            jsonb_build_object('consume_after', jsonb_build_array(v_bung),
                               'saga', jsonb_build_object('id', v_id, 'step', s.step,
                                                          'bung', v_bung, 'compensation', true)));
        UPDATE mbus.saga_step AS st SET comp_iid = v_iid WHERE st.saga_id = v_id AND st.step = s.step;
        v_comp := v_comp || v_iid;
    END LOOP;
    PERFORM mbus.saga_post('mbus_saga_done', jsonb_build_object('saga_id', v_id),
        jsonb_build_object('consume_after',
                           to_jsonb(CASE WHEN cardinality(v_comp) = 0 THEN ARRAY[v_bung] ELSE v_comp END)),
        NULL, v_done);
    PERFORM mbus.saga_post('mbus_saga_final',
        jsonb_build_object('saga_id', v_id, 'take', to_jsonb(v_comp || v_done || v_bung)),
        jsonb_build_object('consume_after', to_jsonb(v_fwd)), NULL, v_final);
    RETURN v_id;
END;
$$;

-- saga_rollback(saga_id, reason): start the rollback: take the bung and every forward message
-- it lists (waiting for handlers that hold one to finish). Returns false when there was nothing
-- to take (the saga completed, or another handler rolled it back first). While another
-- transaction is rolling the same saga back this raises 55P03 (lock_not_available) at once
-- instead of waiting (which could deadlock with that transaction waiting for the caller's own
-- message): the caller rolls back, which frees its message for the other rollback.
CREATE FUNCTION mbus.saga_rollback(saga_id bigint, reason text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    s mbus.saga;
    b mbus.qt_model;
    x text;
BEGIN
    SELECT * INTO s FROM mbus.saga AS g WHERE g.saga_id = saga_rollback.saga_id FOR UPDATE NOWAIT;
    IF s.saga_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('saga %s does not exist', saga_id);
    END IF;
    IF s.state <> 'running' THEN
        RETURN false;
    END IF;
    SELECT * INTO b FROM mbus.take(s.bung_iid) LIMIT 1;
    IF b.id IS NULL THEN
        RETURN false;
    END IF;
    FOR x IN SELECT jsonb_array_elements_text(b.data -> 'take') LOOP
        PERFORM mbus.take(x);
    END LOOP;
    UPDATE mbus.saga AS g SET state = 'compensating', reason = saga_rollback.reason
    WHERE g.saga_id = s.saga_id;
    RETURN true;
END;
$$;

-- saga_step_done(saga_id, step, compensation): record that a step's forward (or compensation)
-- handler did its work; call it in the handler's transaction.
CREATE FUNCTION mbus.saga_step_done(saga_id bigint, step text, compensation boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF compensation THEN
        UPDATE mbus.saga_step AS st SET compensated_at = clock_timestamp()
        WHERE st.saga_id = saga_step_done.saga_id AND st.step = saga_step_done.step;
    ELSE
        UPDATE mbus.saga_step AS st SET done_at = clock_timestamp()
        WHERE st.saga_id = saga_step_done.saga_id AND st.step = saga_step_done.step;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('saga %s has no step %L', saga_id, step);
    END IF;
END;
$$;

-- saga_pump(amount): handle up to amount final and done messages: a final message completes
-- its saga (taking the compensations, the done message and the bung); a done message marks
-- the rollback finished. Returns how many it handled.
CREATE FUNCTION mbus.saga_pump(amount integer DEFAULT 100)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    m mbus.qt_model;
    x text;
    n integer := 0;
BEGIN
    PERFORM mbus.saga_queue('mbus_saga_final');
    PERFORM mbus.saga_queue('mbus_saga_done');
    FOR m IN SELECT * FROM mbus.consumen_mbus_saga_final_by_default(amount) LOOP
        FOR x IN SELECT jsonb_array_elements_text(m.data -> 'take') LOOP
            PERFORM mbus.take(x);
        END LOOP;
        UPDATE mbus.saga AS g SET state = 'completed', finished_at = clock_timestamp()
        WHERE g.saga_id = (m.data ->> 'saga_id')::bigint AND g.state = 'running';
        n := n + 1;
    END LOOP;
    FOR m IN SELECT * FROM mbus.consumen_mbus_saga_done_by_default(amount) LOOP
        UPDATE mbus.saga AS g SET state = 'compensated', finished_at = clock_timestamp()
        WHERE g.saga_id = (m.data ->> 'saga_id')::bigint AND g.state = 'compensating';
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;

-- Sagas with their steps: forward state pending/done/cancelled, compensation state
-- waiting/done (NULL for a step without compensation).
CREATE VIEW mbus.sagas AS
SELECT g.saga_id, g.name, g.state, g.reason, g.created_at, g.finished_at,
       (SELECT jsonb_object_agg(st.step, jsonb_build_object(
                   'forward', CASE WHEN st.done_at IS NOT NULL THEN 'done'
                                   WHEN g.state IN ('compensating', 'compensated') THEN 'cancelled'
                                   ELSE 'pending' END,
                   'compensation', CASE WHEN st.comp_qname IS NULL THEN NULL
                                        WHEN st.compensated_at IS NOT NULL THEN 'done'
                                        ELSE 'waiting' END) ORDER BY st.ord)
        FROM mbus.saga_step AS st WHERE st.saga_id = g.saga_id) AS steps
FROM mbus.saga AS g;

-- ---------------------------------------------------------------------------------------------
-- Privileges (keep last: it covers every function above).

-- The generic entry points are meant for PUBLIC: they only dispatch to the generated
-- functions, whose EXECUTE privilege is what is checked (and USAGE on schema mbus is granted
-- to the queue roles only). Every other function is revoked from PUBLIC by
-- restrict_public_execute (0001); secure_queue does the same for generated functions.
INSERT INTO mbus.public_entry_point (signature)
SELECT f::regprocedure::text
FROM unnest(ARRAY[
    'mbus.check_name(text, text, integer)', 'mbus.require_queue(text)',
    'mbus.require_consumer(text, text)',
    'mbus.post(text, jsonb, jsonb, jsonb, timestamptz, timestamptz, text)',
    'mbus.post_batch(text, jsonb[], jsonb[], jsonb[], timestamptz, timestamptz)',
    'mbus.consume(text, text, timestamptz)', 'mbus.consumen(text, text, integer, timestamptz)',
    'mbus.consume_lease(text, text, integer, interval, integer, timestamptz)',
    'mbus.ack(text, uuid, timestamptz)', 'mbus.nack(text, uuid, interval, timestamptz)',
    'mbus.extend(text, uuid, interval, timestamptz)', 'mbus.take_from(text, text, text)',
    'mbus.peek(text, text)', 'mbus.get_iid(text)'
]) AS f;

SELECT mbus.restrict_public_execute();
