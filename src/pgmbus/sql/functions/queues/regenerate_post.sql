-- Function: mbus.regenerate_post(names, fanout)
--
-- Purpose:  Make post_<q>, the original mbus API's signature, which returns the iid: refuses a
--           post that could never be delivered (MB008, MB006), checks payloads and a given iid
--           (idempotent within queues.iid_window: mbus.client_iids), stamps given headers, then
--           inserts one delivery per consumer and calls post_<dst> per trigger
--           (mbus.regenerate_fanout); consume_after through mbus.await_deps. A plain message to
--           a queue without selectors and triggers takes one INSERT. Why each shortcut: docs/
--           DESIGN.md, Decisions (a plain post is one statement; no statement planned on every
--           call; no SET search_path).
-- Params:   names   mbus.regenerate_names(q)
--           fanout  mbus.regenerate_fanout(q, names)
-- Returns:  void
-- Locks:    none of its own (CREATE OR REPLACE FUNCTION; see mbus.regenerate_queue)
-- Calls:    mbus.await_deps, mbus.check_iid, mbus.check_payload, mbus.dedupe_lock,
--           mbus.dedupe_record, mbus.dep_list, mbus.fill_template, mbus.iid_window,
--           mbus.json_shallow_by_size, mbus.stamp_headers, mbus.with_consume_after
-- Tables:   mbus.client_iids, mbus.queue_dedupe, mbus.queue_segment, mbus.queue_waiter
CREATE OR REPLACE FUNCTION mbus.regenerate_post(names jsonb, fanout jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $gen$
DECLARE
    v_names jsonb := names || fanout;
    v_plain jsonb := fanout -> 'plain';
    v_fast  text := '';
BEGIN
    IF (fanout ->> 'simple')::boolean AND jsonb_array_length(v_plain) > 0 THEN
        v_names := v_names || jsonb_build_object(
            'plain1', v_plain ->> 0,
            'pposted1', fanout -> 'pposted' ->> 0,
            'plain', quote_literal(
                ARRAY(SELECT jsonb_array_elements_text(v_plain))::integer[]::text));
        v_fast := $t$
    IF headers IS NULL AND properties IS NULL AND delayed_until IS NULL AND expires IS NULL
       AND iid IS NULL AND dedupe_key IS NULL AND consume_after IS NULL AND priority = 0
       AND jsonb_typeof(data) = 'object' AND mbus.json_shallow_by_size(data) THEN$t$
            || mbus.fill_template(CASE WHEN jsonb_array_length(v_plain) = 1 THEN $t$
        INSERT INTO mbus.{tbl} AS q (c, vt, id, added, data, seg)
        VALUES ({plain1}, now(), nextval('mbus.msg_id_seq'), now(), {fn_post}.data,
                coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = {q}),
                         1::smallint))
        RETURNING q.id, ARRAY[nextval({posted}), nextval({pposted1})],
                  EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = {q})
        INTO v_id, v_count, v_wait;$t$
                                  ELSE $t$
        v_id := nextval('mbus.msg_id_seq');
        WITH m AS (
            INSERT INTO mbus.{tbl} AS q (c, vt, id, added, data, seg)
            SELECT k.c, now(), v_id, now(), {fn_post}.data,
                   coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = {q}),
                            1::smallint)
            FROM unnest({plain}::integer[]) AS k (c)
            RETURNING CASE q.c{pcount} END AS n)
        SELECT array_agg(m.n) || nextval({posted}),
               EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = {q})
        INTO v_count, v_wait
        FROM m;$t$ END, v_names)
            || mbus.fill_template($t$
        IF v_wait THEN
            PERFORM pg_notify({chan}, {q});
        END IF;
        RETURN {q_prefix} || v_id || '@' || current_database();
    END IF;$t$, v_names);
    END IF;
    v_names := v_names || jsonb_build_object(
        'fast', v_fast,
        'deliver', mbus.fill_template($t$
    DECLARE
        v_vt  timestamptz := coalesce(t.delayed_until, t.added);
        v_seg smallint;
    BEGIN
    IF headers IS NOT NULL AND headers ? 'consume_after' THEN
        t.consume_after := mbus.dep_list(headers -> 'consume_after');
        IF mbus.await_deps({q}, t.id, t.iid, t.consume_after) THEN
            v_vt := 'infinity';
        END IF;
    END IF;
    -- Deliveries that will wait long go to the parking segment 0 (never truncated). The
    -- current segment is looked up inline: mbus.segment_of (the column default) has SET
    -- search_path, so it is never inlined and cost ~85 us of CPU per post (pgbench profile).
    v_seg := CASE WHEN v_vt > t.added + interval '1 minute' THEN 0
                  ELSE coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = {q}),
                                1::smallint) END;$t$, names)
            || CASE WHEN fanout ->> 'sel' = '' THEN ''
                    ELSE mbus.fill_template($t$
    -- Selectors, all in one block; when one raises, each again in its own: the copy of a
    -- consumer or trigger whose selector raised goes to mbus.dmq, the others are delivered.
    BEGIN{sel}
    EXCEPTION WHEN OTHERS THEN{sel1}
    END;$t$, fanout) END
            || (fanout ->> 'deliver') || $t$
    END;$t$,
        'default_headers', CASE WHEN (fanout ->> 'simple')::boolean THEN ''
            ELSE mbus.fill_template($t$
    ELSE
        t.headers := jsonb_build_object('seenby', jsonb_build_array(current_database()),
                                        'source_db', current_database(), 'destination', {q},
                                        'enqueue_time', t.added);$t$, names) END);
    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_post}(
    data jsonb, headers jsonb DEFAULT NULL, properties jsonb DEFAULT NULL,
    delayed_until timestamptz DEFAULT NULL, expires timestamptz DEFAULT NULL, iid text DEFAULT NULL,
    dedupe_key text DEFAULT NULL, consume_after anycompatible DEFAULT NULL::text,
    priority integer DEFAULT 0)
RETURNS text LANGUAGE plpgsql VOLATILE AS {body}$f$,
    jsonb_build_object(
        'fn_post', names ->> 'fn_post',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    t     mbus.qt_model;
    v_iid text;   -- stored iid: NULL when it is this queue's own '<q>.<id>@<db>'
    v_hdr jsonb;  -- stored headers: NULL when they are the default ones
    v_dup mbus.queue_dedupe;
    v_prio smallint := 0;  -- priority: 0..32767, higher claimed first
    v_count bigint[];  -- the counters' new values (not used)
    v_wait boolean;
    v_id bigint;  -- the plain post's message id
    v_old boolean;  -- the iid's mbus.client_iids row is older than queues.iid_window
    v_again boolean;  -- this transaction consumed the message posted with the iid
    v_pending boolean;  -- a delivery of the iid is pending here{vars}
BEGIN{fast}{guard}
    IF priority IS DISTINCT FROM 0 AND priority IS NOT NULL THEN
        IF priority < 0 OR priority > 32767 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('priority %s is not in 0..32767', priority);
        END IF;
        v_prio := priority;
    END IF;
    -- the checks in full only for a value that is off or big enough to be too deep
    IF data IS NULL OR jsonb_typeof(data) <> 'object' OR NOT mbus.json_shallow_by_size(data) THEN
        PERFORM mbus.check_payload('data', data, false);
    END IF;
    -- the calls (which name the argument in the error) only when one of them is not an object
    IF (headers IS NOT NULL AND (jsonb_typeof(headers) <> 'object'
                                 OR NOT mbus.json_shallow_by_size(headers)))
       OR (properties IS NOT NULL AND (jsonb_typeof(properties) <> 'object'
                                       OR NOT mbus.json_shallow_by_size(properties))) THEN
        PERFORM mbus.check_payload('headers', headers);
        PERFORM mbus.check_payload('properties', properties);
    END IF;
    IF consume_after IS NOT NULL THEN  -- the seed's named parameter, merged into the headers
        headers := mbus.with_consume_after(headers, to_jsonb(consume_after));
    END IF;
    IF iid IS NOT NULL THEN  -- a bad iid is refused whatever happens next
        t.id := mbus.check_iid(iid, {q});
    END IF;
    IF dedupe_key IS NOT NULL THEN
        -- Dedupe: while the message last posted with this key is pending, return its iid.
        -- Before the iid is remembered: a post that stores nothing must not use it up.
        v_dup := mbus.dedupe_lock({q}, dedupe_key);
        IF EXISTS (SELECT 1 FROM mbus.{tbl} AS q WHERE q.id = v_dup.id) THEN
            RETURN v_dup.iid;
        END IF;
    END IF;
    IF iid IS NOT NULL THEN
        -- A client's iid (mbus.check_iid: never one the sequence has not handed out yet) is
        -- remembered in mbus.client_iids for queues.iid_window: within it a post of the iid is
        -- a producer's retry and stores nothing, consumed or not (a second post waits on the
        -- first's uncommitted row: one stores), and says so (notice 01M01). One exception: the
        -- transaction that consumed the message (consumed_in, set by the claims) puts it back
        -- (the seed's retry: consume, then post it again with its iid and delayed_until); that
        -- post is stored and remembered again. A row older than the window is taken over; so
        -- is a post of an iid still pending here (posted before the window). Loops only when
        -- the upkeep deleted the row. (t.id: set by mbus.check_iid above for an iid of this
        -- queue's own form.)
        LOOP
            INSERT INTO mbus.client_iids (qname, iid, posted_at) VALUES ({q}, {fn_post}.iid, now())
            ON CONFLICT ON CONSTRAINT client_iids_pkey DO NOTHING;
            EXIT WHEN FOUND;
            SELECT ci.posted_at <= now() - mbus.iid_window(),
                   coalesce(ci.consumed_in = pg_current_xact_id_if_assigned(), false)
            INTO v_old, v_again
            FROM mbus.client_iids AS ci WHERE ci.qname = {q} AND ci.iid = {fn_post}.iid;
            CONTINUE WHEN NOT FOUND;
            IF v_old OR v_again THEN
                -- no lock before: two retries at once must not wait on each other
                UPDATE mbus.client_iids AS ci SET posted_at = now(), consumed_in = NULL
                WHERE ci.qname = {q} AND ci.iid = {fn_post}.iid
                  AND (ci.posted_at <= now() - mbus.iid_window()
                       OR ci.consumed_in = pg_current_xact_id_if_assigned());
                EXIT WHEN FOUND;
                CONTINUE;
            END IF;
            RAISE NOTICE USING ERRCODE = '01M01',
                MESSAGE = format('iid %s was posted to queue %s within queues.iid_window: '
                                 'a retry, nothing stored', iid, {q}),
                HINT = 'only the transaction that consumed the message posts it again';
            RETURN iid;
        END LOOP;
        IF t.id IS NOT NULL THEN
            -- pending under this own-form iid: a no-op; the id held by a message with a
            -- client's iid: that is another message, whose id must stay its own
            CASE (SELECT q.iid IS NULL FROM mbus.{tbl} AS q WHERE q.id = t.id LIMIT 1)
            WHEN true THEN
                v_pending := true;
            WHEN false THEN
                RAISE EXCEPTION USING ERRCODE = 'MB006',
                    MESSAGE = format('iid %s names message %s of queue %s, which is another '
                                     'message (posted with an iid of its own)', iid, t.id, {q});
            ELSE
                NULL;
            END CASE;
        ELSE
            v_pending := EXISTS (SELECT 1 FROM mbus.{tbl} AS q WHERE q.iid = {fn_post}.iid);
        END IF;
        IF v_pending THEN
            IF v_again THEN
                -- another consumer's delivery of it is still there: storing would give that
                -- consumer a second one, storing nothing would lose this consumer's retry
                RAISE EXCEPTION USING ERRCODE = 'MB006',
                    MESSAGE = format('iid %s is consumed in this transaction but still pending '
                                     'in queue %s for another consumer: posting it again would '
                                     'deliver it twice', iid, {q}),
                    HINT = 'retry with a lease and nack(delay), or post a new message';
            END IF;
            RAISE NOTICE USING ERRCODE = '01M01',
                MESSAGE = format('iid %s is pending in queue %s: a retry, nothing stored',
                                 iid, {q});
            RETURN iid;
        END IF;
    END IF;{nocons}
    IF t.id IS NULL THEN
        t.id := nextval('mbus.msg_id_seq');
        v_iid := iid;
    END IF;
    t.iid := coalesce(v_iid, {q_prefix} || t.id || '@' || current_database());
    IF dedupe_key IS NOT NULL THEN
        PERFORM mbus.dedupe_record({q}, dedupe_key, t.id, t.iid);
    END IF;
    t.added := now();
    t.delayed_until := delayed_until;
    t.expires := expires;
    IF headers IS NOT NULL THEN
        t.headers := mbus.stamp_headers(headers, {q}, t.added);
        v_hdr := t.headers;{default_headers}
    END IF;
    t.properties := properties;
    t.data := data;
    t.attempts := 0;
{deliver}
{triggers}
    -- Two IFs, not one AND: a condition with a sub-select is a query, which PostgreSQL
    -- planned again on every post (its custom plan, with v_prio folded, always looked cheaper
    -- than the generic one); `v_prio > 0` alone is a plain expression.
    IF v_prio > 0 THEN
        IF NOT (SELECT s.prioritized FROM mbus.queue_segment AS s WHERE s.qname = {q}) THEN
            -- the queue's first message with a priority: claims take the priority tier from now on
            UPDATE mbus.queue_segment AS s SET prioritized = true
            WHERE s.qname = {q} AND NOT s.prioritized;
        END IF;
    END IF;
    -- Counters (messages posted to the queue, deliveries to each consumer) and whether someone
    -- waits on the queue (the notify is sent only then), in one statement.
    SELECT ARRAY[nextval({posted}){count}],
           EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = {q})
    INTO v_count, v_wait;
    IF v_wait THEN
        PERFORM pg_notify({chan}, {q});
    END IF;
    RETURN t.iid;
END;
$b$, v_names))));
END;
$gen$;
