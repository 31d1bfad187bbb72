-- 0006 queues: segmented delivery tables, recycled by TRUNCATE instead of VACUUM.
--
-- Why. A busy queue inserts and deletes its whole volume. Without VACUUM the free space map of a
-- delivery table is never updated, so every insert extends the heap although HOT pruning has
-- emptied the old pages, and btree pages emptied at the left end of the ever-increasing
-- (c, vt, id) and (id) keys are only recycled by VACUUM, so claims walk more and more dead
-- index entries. Default autovacuum (a 1-minute naptime, a 20 % scale factor) cannot keep up
-- with a queue that turns over a million rows a minute; tuning it per table would be the
-- "aggressive VACUUM" the seed asks for. Storage must recycle itself instead (PgQ's rotating
-- event tables): each queue's table mbus.q_<q> is now LIST-partitioned on a column seg into
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

-- segment_of(qname): the segment new deliveries of qname go to (the seg column's default).
CREATE FUNCTION mbus.segment_of(qname text)
RETURNS smallint
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = segment_of.qname),
                    1::smallint);
$$;

-- create_segments(qname): the partitions of mbus.q_<qname> (a partitioned table) with their
-- indexes: q_<q>$0 (parking) and q_<q>$1..$3 (rotating); index names q_<q>_<kind>$<n>.
CREATE FUNCTION mbus.create_segments(qname text, p_from integer DEFAULT 0)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    tbl text := 'q_' || qname;
    seg text;
BEGIN
    FOR n IN p_from .. 3 LOOP
        seg := tbl || '$' || n;
        IF to_regclass(format('mbus.%I', seg)) IS NULL THEN
            EXECUTE format('CREATE TABLE mbus.%I PARTITION OF mbus.%I FOR VALUES IN (%s)',
                           seg, tbl, n);
        END IF;
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, vt, id)',
                       tbl || '_claim$' || n, seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (id)', tbl || '_id$' || n, seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (iid) WHERE iid IS NOT NULL',
                       tbl || '_iid$' || n, seg);
        EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON mbus.%I (lease_token) '
                       'WHERE lease_token IS NOT NULL', tbl || '_lease$' || n, seg);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (expires) WHERE expires IS NOT NULL',
                       tbl || '_expires$' || n, seg);
        EXECUTE format('COMMENT ON TABLE mbus.%I IS %L', seg,
                       CASE WHEN n = 0 THEN format('queue %s: deliveries that wait long', qname)
                            ELSE format('queue %s: rotating delivery segment %s', qname, n) END);
    END LOOP;
    -- Parent indexes of the same names as before segmentation: they attach the segments'
    -- indexes (nothing is built) and keep the names the docs and notices give.
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (c, vt, id)', tbl || '_claim', tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (id)', tbl || '_id', tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (iid) WHERE iid IS NOT NULL',
                   tbl || '_iid', tbl);
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON mbus.%I (expires) WHERE expires IS NOT NULL',
                   tbl || '_expires', tbl);
    INSERT INTO mbus.queue_segment (qname) VALUES (qname) ON CONFLICT DO NOTHING;
END;
$$;

-- create_queue(qname, ncons, is_roles_security_model): as in 0002, with a segmented table.
CREATE OR REPLACE FUNCTION mbus.create_queue(qname text, ncons integer DEFAULT 1,
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
    waited        boolean NOT NULL DEFAULT false,
    seg           smallint NOT NULL DEFAULT mbus.segment_of(%L)
) PARTITION BY LIST (seg)$t$, tbl, qname);
    EXECUTE format('COMMENT ON TABLE mbus.%I IS %L', tbl,
                   format('deliveries of queue %s: one row per (message, consumer)', qname));
    PERFORM mbus.create_segments(qname);
    INSERT INTO mbus.consumer (qname, cname, selector) VALUES (qname, 'default', NULL);
    PERFORM mbus.queue_created(qname);
    PERFORM mbus.regenerate_queue(qname);
END;
$$;

-- regenerate_queue(qname): as in 0002; posts set seg, claims delete/update per segment.
CREATE OR REPLACE FUNCTION mbus.regenerate_queue(qname text)
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
    -- Claim pieces per variant k (array index k + 1): k = 0 reads every segment, k = 1..3
    -- every segment but k, the one rotate_queue is closing (see rotate_queue).
    v_filter   text[] := ARRAY['', '', '', ''];  -- the seg condition that prunes segment k
    v_dels     text[] := ARRAY['', '', '', ''];  -- dn: delete the claimed rows of segment n
    v_dunion   text[] := ARRAY['', '', '', ''];
    v_gone     text[] := ARRAY['', '', '', ''];  -- lease: gn deletes the dead rows of segment n
    v_gunion   text[] := ARRAY['', '', '', ''];
    v_ups      text[] := ARRAY['', '', '', ''];  -- lease: un leases the other rows of segment n
    v_uunion   text[] := ARRAY['', '', '', ''];
    v_cn       text;  -- the claim chains of one consumer (consumen, consume, lease)
    v_c1       text;
    v_cl       text;
    v_closing  text := format(
        '(SELECT s.closing FROM mbus.queue_segment AS s WHERE s.qname = %L '
        'AND s.closing_since > clock_timestamp() - interval ''10 seconds'')', qname);
    v_seg      text;
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
    FOR k IN 0 .. 3 LOOP
        IF k > 0 THEN
            v_filter[k + 1] := format(' AND s.seg IN (%s)',
                                      array_to_string(array_remove(ARRAY[0, 1, 2, 3], k), ', '));
        END IF;
        FOR n IN 0 .. 3 LOOP
            CONTINUE WHEN n = k AND k > 0;
            v_seg := 'mbus.' || quote_ident(tbl || '$' || n);
            v_dels[k + 1] := v_dels[k + 1] || format($t$,
    d%1$s AS (
        DELETE FROM %2$s AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.rel = %3$L::regclass))
        RETURNING q.vt AS claim_vt, %4$s)$t$, n, v_seg, v_seg, ret_cols);
            v_gone[k + 1] := v_gone[k + 1] || format($t$,
    g%1$s AS (
        DELETE FROM %2$s AS q
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE s.dead AND s.rel = %3$L::regclass))
        RETURNING %4$s)$t$, n, v_seg, v_seg, ret_cols);
            v_ups[k + 1] := v_ups[k + 1] || format($t$,
    u%1$s AS (
        UPDATE %2$s AS q
        SET vt = v_now + lease, attempts = q.attempts + 1, lease_token = gen_random_uuid()
        WHERE q.ctid = ANY (ARRAY(SELECT s.tid FROM s WHERE NOT s.dead AND s.rel = %3$L::regclass))
        RETURNING %4$s, q.lease_token, q.vt)$t$, n, v_seg, v_seg, ret_cols);
            v_dunion[k + 1] := v_dunion[k + 1] || CASE WHEN v_dunion[k + 1] = '' THEN ''
                               ELSE ' UNION ALL ' END || format('SELECT * FROM d%s', n);
            v_gunion[k + 1] := v_gunion[k + 1] || CASE WHEN v_gunion[k + 1] = '' THEN ''
                               ELSE ' UNION ALL ' END || format('SELECT * FROM g%s', n);
            v_uunion[k + 1] := v_uunion[k + 1] || CASE WHEN v_uunion[k + 1] = '' THEN ''
                               ELSE ' UNION ALL ' END || format('SELECT * FROM u%s', n);
        END LOOP;
    END LOOP;

    -- Fan-out: one INSERT per consumer, guarded by its selector (t is the message).
    FOR r IN SELECT c.cid, c.selector FROM mbus.consumer AS c
             WHERE c.qname = q ORDER BY c.cid LOOP
        v_fanout := v_fanout || format($t$
    %s INSERT INTO mbus.%I (c, vt, id, iid, added, delayed_until, expires, headers, properties, data,
                           consume_after, seg)
        VALUES (%s, v_vt, t.id, v_iid, t.added, t.delayed_until,
                t.expires, v_hdr, t.properties, t.data, t.consume_after, v_seg);
    %s$t$,
            CASE WHEN r.selector IS NULL THEN '' ELSE format('IF (%s) THEN', r.selector) END,
            tbl, r.cid,
            CASE WHEN r.selector IS NULL THEN '' ELSE 'END IF;' END);
        v_fanoutn := v_fanoutn || format($t$,
    %s AS (
        INSERT INTO mbus.%I (c, vt, id, iid, added, delayed_until, expires, headers, properties,
                             data, seg)
        SELECT %s, coalesce(t.delayed_until, t.added), t.id, NULL, t.added, t.delayed_until,
               t.expires, t.stored_headers, t.properties, t.data, v_seg
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
        v_vt  timestamptz := coalesce(t.delayed_until, t.added);
        v_seg smallint;
    BEGIN
    IF headers IS NOT NULL AND headers ? 'consume_after' THEN
        t.consume_after := mbus.dep_list(headers -> 'consume_after');
        IF mbus.await_deps(%L, t.id, t.iid, t.consume_after) THEN
            v_vt := 'infinity';
        END IF;
    END IF;
    -- Deliveries that will wait long go to the parking segment 0 (never truncated).
    v_seg := CASE WHEN v_vt > t.added + interval '1 minute' THEN 0
                  ELSE mbus.segment_of(%L) END;$t$,
        q, q) || v_fanout || $t$
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
    v_seg smallint;
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
    v_seg := CASE WHEN delayed_until > v_now + interval '1 minute' THEN 0
                  ELSE mbus.segment_of(%L) END;
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
$b$, q, q, q, q, chan, q, q || '.', q, v_fanoutn, v_trign, v_fire));

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

    -- Per consumer: consume, consumen, lease, take_from. Claims lock through the parent (one
    -- ordered Merge Append over the segments' claim indexes), then delete or update the locked
    -- rows segment by segment by ctid (a ctid names a row only within its segment). While
    -- rotate_queue closes a drained segment k, claims run the variant whose constant seg
    -- condition prunes k at plan time: that plan does not name k, so new claims do not lock
    -- it and rotate_queue can truncate it although consumers' transactions overlap.
    FOR r IN SELECT c.cid, c.cname FROM mbus.consumer AS c WHERE c.qname = q LOOP
        v_cn := '';
        v_c1 := '';
        v_cl := '';
        FOR k IN 0 .. 3 LOOP
            v_cn := v_cn || format($t$
    %5$s
        RETURN QUERY
        WITH s AS MATERIALIZED (
            SELECT s.tableoid AS rel, s.ctid AS tid FROM mbus.%1$I AS s
            WHERE s.c = %2$s AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)%6$s
            ORDER BY s.vt, s.id
            LIMIT amt
            FOR UPDATE SKIP LOCKED)%3$s
        SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties,
               d.data, d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
        FROM (%4$s) AS d ORDER BY d.claim_vt, d.id;$t$,
                tbl, r.cid, v_dels[k + 1], v_dunion[k + 1],
                CASE k WHEN 0 THEN 'IF v_closing IS NULL THEN' WHEN 3 THEN 'ELSE'
                       ELSE format('ELSIF v_closing = %s THEN', k) END, v_filter[k + 1]);
            v_c1 := v_c1 || format($t$
    %5$s
        RETURN QUERY
        WITH s AS MATERIALIZED (
            SELECT s.tableoid AS rel, s.ctid AS tid FROM mbus.%1$I AS s
            WHERE s.c = %2$s AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)%6$s
            ORDER BY s.vt, s.id
            LIMIT 1
            FOR UPDATE SKIP LOCKED)%3$s
        SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties,
               d.data, d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
        FROM (%4$s) AS d;$t$,
                tbl, r.cid, v_dels[k + 1], v_dunion[k + 1],
                CASE k WHEN 0 THEN 'IF v_closing IS NULL THEN' WHEN 3 THEN 'ELSE'
                       ELSE format('ELSIF v_closing = %s THEN', k) END, v_filter[k + 1]);
            v_cl := v_cl || format($t$
    %9$s
        RETURN QUERY
        WITH s AS MATERIALIZED (
            SELECT s.tableoid AS rel, s.ctid AS tid,
                   s.attempts >= coalesce(max_attempts, 2147483647) AS dead
            FROM mbus.%1$I AS s
            WHERE s.c = %2$s AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)%10$s
            ORDER BY s.vt, s.id
            LIMIT amt
            FOR UPDATE SKIP LOCKED)%3$s,
        buried AS (
            INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                                  properties, data, consume_after, attempts, reason)
            SELECT %4$L, %5$L, g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
                   g.properties, g.data, g.consume_after, g.attempts,
                   format('max_attempts (%%s) exceeded', max_attempts)
            FROM (%6$s) AS g)%7$s
        %8$s;$t$,
                tbl, r.cid, v_gone[k + 1], q, r.cname, v_gunion[k + 1], v_ups[k + 1],
                v_uunion[k + 1],
                CASE k WHEN 0 THEN 'IF v_closing IS NULL THEN' WHEN 3 THEN 'ELSE'
                       ELSE format('ELSIF v_closing = %s THEN', k) END, v_filter[k + 1]);
        END LOOP;

        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(amt integer, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            format('consumen_%s_by_%s', q, r.cname), format($b$
DECLARE
    v_now     timestamptz := coalesce(p_now, clock_timestamp());
    v_db      text := current_database();
    v_closing smallint := %2$s;
BEGIN
    IF amt IS NULL OR amt < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'amt must be a non-negative integer';
    END IF;
    -- The TID scans delete in physical order: sort the claimed rows back into claim order.%1$s
    END IF;
END;
$b$, v_cn, v_closing));

        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            format('consume_%s_by_%s', q, r.cname), format($b$
DECLARE
    v_now     timestamptz := coalesce(p_now, clock_timestamp());
    v_db      text := current_database();
    v_closing smallint := %2$s;
BEGIN%1$s
    END IF;
END;
$b$, v_c1, v_closing));

        -- lease_<q>_by_<c>: claim up to amt with a visibility timeout; a message already
        -- delivered max_attempts times goes to the dmq instead of being returned.
        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(amt integer, lease interval, max_attempts integer DEFAULT NULL,
                                   p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            format('lease_%s_by_%s', q, r.cname), format($b$
DECLARE
    v_now     timestamptz := coalesce(p_now, clock_timestamp());
    v_db      text := current_database();
    v_closing smallint := %2$s;
BEGIN
    IF amt IS NULL OR amt < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'amt must be a non-negative integer';
    END IF;
    IF lease IS NULL OR lease <= '0'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'lease must be > 0';
    END IF;
    IF max_attempts IS NOT NULL AND max_attempts < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'max_attempts must be >= 1';
    END IF;%1$s
    END IF;
END;
$b$, v_cl, v_closing));

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

-- rotate_queue(qname): the queue's storage upkeep, in place of VACUUM. Call it in a READ
-- COMMITTED transaction of its own (autocommit), about once a second on a busy queue (Bus
-- consumers, the worker and `pgmbus queue rotate --every` do). It
--   1. TRUNCATEs every rotating segment that is not current and has no row left. The segment
--      is looked at without a lock first; then LOCK ... ACCESS EXCLUSIVE NOWAIT: when any open
--      transaction touched it (a consumer between claim and commit, a post not yet committed,
--      a reader) the lock is refused at once, so the call never waits in the lock queue and
--      never makes a consumer wait behind it; it tries again in the gaps between those
--      transactions (p_tries times, a millisecond apart), else the segment waits for the next
--      call. Under the lock it is checked again (nobody can add a row then) and truncated.
--      A drained segment that stays busy is closed (queue_segment.closing): claims then run a
--      plan variant that prunes it, so it frees up once the claims made before have ended;
--   2. makes the next empty rotating segment current once the current one's heap reached
--      rotate_bytes (a segment still holding rows, e.g. a slow consumer's backlog or a long
--      nack delay, is passed over, so rotation proceeds through the others).
-- Call it in autocommit: the ACCESS EXCLUSIVE lock of a TRUNCATE is held to the end of the
-- calling transaction. It does nothing in a transaction that wrote already or that is not READ
-- COMMITTED (under REPEATABLE READ or SERIALIZABLE the emptiness check could miss a row
-- committed after the snapshot). Concurrent calls for one queue: one works, the others return
-- at once. Returns a JSON report.
CREATE FUNCTION mbus.rotate_queue(qname text, p_tries integer DEFAULT 100)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    tbl         text := 'q_' || qname;
    st          mbus.queue_segment;
    v_seg       regclass;
    v_live      boolean;
    v_truncated integer[] := '{}';
    v_busy      integer[] := '{}';
    v_kept      integer[] := '{}';
    v_next      integer;
    v_closing   integer;
BEGIN
    PERFORM mbus.require_queue(qname);
    -- A transaction that wrote already is not one of its own; under REPEATABLE READ or
    -- SERIALIZABLE the emptiness check could miss a row committed after the snapshot.
    IF current_setting('transaction_isolation') <> 'read committed'
       OR pg_current_xact_id_if_assigned() IS NOT NULL THEN
        RETURN jsonb_build_object('skipped',
            'rotate_queue works only in a READ COMMITTED transaction of its own (autocommit)');
    END IF;
    IF NOT pg_try_advisory_xact_lock(1835165043, hashtext(qname)) THEN
        RETURN jsonb_build_object('skipped', 'another rotate_queue of this queue is running');
    END IF;
    SELECT * INTO st FROM mbus.queue_segment AS s WHERE s.qname = rotate_queue.qname;
    FOR n IN 1 .. 3 LOOP
        CONTINUE WHEN n = st.cur;
        v_seg := format('mbus.%I', tbl || '$' || n)::regclass;
        CONTINUE WHEN pg_relation_size(v_seg) = 0;
        EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', v_seg) INTO v_live;
        IF v_live THEN
            v_kept := v_kept || n;
            CONTINUE;
        END IF;
        -- Busy consumers hold the segment's lock from claim to commit, nearly all the time:
        -- try again in the gaps, every millisecond for a while, but never sleep once this
        -- call holds the lock of a truncated segment (consumers would wait for it).
        FOR v_try IN 1 .. CASE WHEN cardinality(v_truncated) = 0 THEN greatest(p_tries, 1) ELSE 1 END LOOP
            BEGIN
                EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE NOWAIT', v_seg);
                EXECUTE format('SELECT EXISTS (SELECT 1 FROM %s)', v_seg) INTO v_live;
                IF v_live THEN
                    RAISE EXCEPTION USING ERRCODE = 'MBOK0';  -- roll back: releases the lock now
                END IF;
                EXECUTE format('TRUNCATE %s', v_seg);
                v_truncated := v_truncated || n;
                EXIT;
            EXCEPTION
                WHEN lock_not_available THEN
                    IF v_try >= p_tries OR cardinality(v_truncated) > 0 THEN
                        v_busy := v_busy || n;
                    ELSE
                        PERFORM pg_sleep(0.001);
                    END IF;
                WHEN SQLSTATE 'MBOK0' THEN
                    v_kept := v_kept || n;
                    EXIT;
            END;
        END LOOP;
    END LOOP;
    IF pg_relation_size(format('mbus.%I', tbl || '$' || st.cur)::regclass) >= st.rotate_bytes THEN
        SELECT x.n INTO v_next
        FROM generate_series(1, 2) AS g(k), LATERAL (SELECT (st.cur - 1 + g.k) % 3 + 1 AS n) AS x
        WHERE pg_relation_size(format('mbus.%I', tbl || '$' || x.n)::regclass) = 0
        ORDER BY g.k LIMIT 1;
    END IF;
    -- A drained segment that stays busy is closed: claims switch to plans that do not name
    -- it, so the transactions holding it end and none take it again (a post committed late
    -- into it is seen by the look above, which reopens it; claims also ignore a closing not
    -- refreshed for 10 seconds, should this upkeep stop).
    v_closing := CASE WHEN st.closing = ANY (v_busy) THEN st.closing
                      WHEN cardinality(v_busy) > 0 THEN v_busy[1] END;
    IF v_next IS NOT NULL OR cardinality(v_truncated) > 0 OR v_closing IS NOT NULL
       OR st.closing IS NOT NULL THEN
        UPDATE mbus.queue_segment AS s
        SET cur = coalesce(v_next, s.cur),
            rotations = s.rotations + (v_next IS NOT NULL)::integer,
            rotated_at = CASE WHEN v_next IS NOT NULL THEN now() ELSE s.rotated_at END,
            truncations = s.truncations + cardinality(v_truncated),
            closing = v_closing,
            closing_since = CASE WHEN v_closing IS NOT NULL THEN now() END
        WHERE s.qname = rotate_queue.qname;
    END IF;
    RETURN jsonb_build_object('current', coalesce(v_next, st.cur), 'rotated', v_next IS NOT NULL,
                              'truncated', to_jsonb(v_truncated), 'busy', to_jsonb(v_busy),
                              'kept', to_jsonb(v_kept), 'closing', v_closing);
END;
$$;

-- rotate_queues(): rotate_queue for every queue; returns {queue: report} (call in autocommit).
CREATE FUNCTION mbus.rotate_queues()
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q      text;
    v_report jsonb := '{}';
BEGIN
    FOR v_q IN SELECT s.qname FROM mbus.queue_segment AS s ORDER BY s.qname LOOP
        v_report := v_report || jsonb_build_object(v_q, mbus.rotate_queue(v_q));
    END LOOP;
    RETURN v_report;
END;
$$;

-- segment_queue(qname): turn a queue table made before this migration into the segmented
-- layout: the old table becomes segment 1 (its rows stay), its views are made again with
-- their grants, and the queue's functions are regenerated.
CREATE FUNCTION mbus.segment_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    tbl  text := 'q_' || qname;
    v    record;
    a    record;
    k    text;
    cols text;
BEGIN
    IF (SELECT c.relkind FROM pg_class AS c
        WHERE c.oid = to_regclass(format('mbus.%I', tbl))) IS DISTINCT FROM 'r' THEN
        RETURN;
    END IF;
    CREATE TEMPORARY TABLE segment_views ON COMMIT DROP AS
    SELECT qv.view_schema, qv.view_name, c.relacl
    FROM mbus.queue_view AS qv
    JOIN pg_class AS c ON c.oid = to_regclass(format('%I.%I', qv.view_schema, qv.view_name))
    WHERE qv.qname = segment_queue.qname;
    FOR v IN SELECT * FROM pg_temp.segment_views LOOP
        EXECUTE format('DROP VIEW %I.%I', v.view_schema, v.view_name);
        DELETE FROM mbus.queue_view AS qv
        WHERE qv.view_schema = v.view_schema AND qv.view_name = v.view_name;
    END LOOP;
    EXECUTE format('DROP TRIGGER IF EXISTS dep_gone ON mbus.%I', tbl);
    EXECUTE format('ALTER TABLE mbus.%I RENAME TO %I', tbl, tbl || '$1');
    FOREACH k IN ARRAY ARRAY['claim', 'id', 'iid', 'lease', 'expires'] LOOP
        EXECUTE format('ALTER INDEX IF EXISTS mbus.%I RENAME TO %I', tbl || '_' || k,
                       tbl || '_' || k || '$1');
    END LOOP;
    EXECUTE format('ALTER TABLE mbus.%I ADD COLUMN seg smallint NOT NULL DEFAULT 1', tbl || '$1');
    SELECT string_agg(format('%I %s', att.attname, format_type(att.atttypid, att.atttypmod))
                      || CASE WHEN att.attnotnull THEN ' NOT NULL' ELSE '' END, ', '
                      ORDER BY att.attnum)
    INTO cols
    FROM pg_attribute AS att
    WHERE att.attrelid = format('mbus.%I', tbl || '$1')::regclass AND att.attnum > 0
      AND NOT att.attisdropped AND att.attname <> 'seg';
    EXECUTE format('CREATE TABLE mbus.%I (%s, seg smallint NOT NULL DEFAULT mbus.segment_of(%L)) '
                   'PARTITION BY LIST (seg)', tbl, cols, qname);
    EXECUTE format('ALTER TABLE mbus.%I ALTER COLUMN attempts SET DEFAULT 0', tbl);
    EXECUTE format('ALTER TABLE mbus.%I ALTER COLUMN waited SET DEFAULT false', tbl);
    EXECUTE format('ALTER TABLE mbus.%I ATTACH PARTITION mbus.%I FOR VALUES IN (1)',
                   tbl, tbl || '$1');
    EXECUTE format('COMMENT ON TABLE mbus.%I IS %L', tbl,
                   format('deliveries of queue %s: one row per (message, consumer)', qname));
    PERFORM mbus.create_segments(qname);
    EXECUTE format('CREATE CONSTRAINT TRIGGER dep_gone AFTER DELETE ON mbus.%I '
                   'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.waited) '
                   'EXECUTE FUNCTION mbus.on_dep_gone(%L)', tbl, qname);
    FOR v IN SELECT * FROM pg_temp.segment_views LOOP
        PERFORM mbus.create_view(qname, format('%I.%I', v.view_schema, v.view_name));
        FOR a IN SELECT * FROM aclexplode(v.relacl) LOOP
            EXECUTE format('GRANT %s ON %I.%I TO %s', a.privilege_type, v.view_schema,
                           v.view_name, CASE WHEN a.grantee = 0 THEN 'PUBLIC'
                                             ELSE quote_ident(pg_get_userbyid(a.grantee)) END);
        END LOOP;
    END LOOP;
    DROP TABLE pg_temp.segment_views;
    PERFORM mbus.regenerate_queue(qname);
END;
$$;

SELECT mbus.segment_queue(q.qname) FROM mbus.queue AS q ORDER BY q.qname;

-- rotate_queue only truncates segments that hold no row; callable by every role that can
-- consume (the worker and Bus call it).
INSERT INTO mbus.public_entry_point (signature)
VALUES ('mbus.rotate_queue(text, integer)'::regprocedure::text);

SELECT mbus.restrict_public_execute();
