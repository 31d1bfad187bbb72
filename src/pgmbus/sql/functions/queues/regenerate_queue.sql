-- Function: mbus.regenerate_queue(qname)
--
-- Purpose:  Make (CREATE OR REPLACE) the per-queue functions of qname from the catalog (consumers
--           with their selectors, triggers), with static SQL only (names through format('%I'),
--           selectors pasted as expressions over t). The generic entry points dispatch to them;
--           fast clients call them directly. tests/queues/golden holds their text: a change here is
--           a golden diff.
--             Every name comes from mbus.generated_names (the one list the collision check uses).
--             post_<q>: refuses a post that could never be delivered (no consumer and no trigger:
--             MB008; expires not after now and delayed_until: MB006), checks payloads, checks a
--             given iid (mbus.check_iid) and returns at once when mbus.client_iids remembers it
--             (posted within queues.iid_window, consumed or not) or a message with it is pending
--             (idempotent posts; only posts with an iid pay: one insert into mbus.client_iids and
--             one index lookup), makes the id (an iid of this queue's own form is not stored),
--             stamps given headers (the default ones are neither stored nor returned: built only
--             for selectors and triggers, which see t), then
--             inserts one delivery per consumer, each INSERT guarded by the consumer's selector,
--             and calls post_<dst> for each trigger. Selectors are evaluated together in one
--             exception block (queues without selectors have none); when that raises, each again
--             in its own, and the copy whose selector raised goes to mbus.dmq
--             (mbus.selector_failed) while the post and the other copies go on. With
--             headers.consume_after, mbus.await_deps decides whether the message waits (vt =
--             'infinity'). Deliveries due in more than a minute go to the parking segment 0, the
--             others to the current segment (mbus.queue_segment.cur, looked up inline).
--             postn_<q>: many messages in one statement: data-modifying CTEs, one INSERT per
--             consumer over the same numbered messages m; with consume_after, mbus.post_each. On a
--             queue with selectors the statement runs in an exception block, and when it raises
--             the messages are posted one by one through post_<q> (mbus.post_each).
--             take_<q> removes one message (the oldest, should two pending share a client iid);
--             lease_<q>_by_<c> returns its batch in claim order.
--             peek_, deps_ (consume_after's statements on this queue), clear_queue_, take_, ack_,
--             nack_, extend_, bury_<q>; per consumer consume_, consumen_, lease_,
--             take_from_<q>_by_<c>.
--             Claims lock through the parent: FOR UPDATE SKIP LOCKED ordered by (vt, id) (one
--             ordered Merge Append over the segments' claim indexes), keeping the locked rows'
--             ctids per segment; then one DELETE or UPDATE by ctid per segment that holds some (a
--             ctid names a row only within its segment), the rows returned in claim order. The
--             same statement reads the pause flag with the segment row; the consumed counter is
--             bumped by the claim (consume_, consumen_) or by ack_. A lease token's last hex
--             digit is its segment's number: ack_ deletes there, else through the parent.
--             post_ bumps its counters and checks for waiters in one statement.
--             Priority (migration 0017): post_<q>(priority => 0..32767, else MB006) stores it
--             and sets queue_segment.prioritized on the queue's first priority > 0. Claims
--             branch on the flag: unflagged, today's statement; flagged, s is the priority tier
--             (priority > 0, ordered by the partial index q_<q>_prio: priority DESC, vt, id)
--             UNION ALL the claim over the priority-0 rows, under one LIMIT.
--             Each claim holds four variants: k = 0 reads every segment, k = 1..3 every segment but
--             k; a variant's constant seg condition prunes k at plan time, so while
--             mbus.rotate_queue closes segment k (queue_segment.closing, trusted for 10 seconds)
--             new claims do not lock it and it can be truncated although consumers overlap.
--             Hot functions (post, postn, consume, consumen, lease, ack, nack, extend) carry no SET
--             search_path (a GUC save and restore per call) and qualify every name. Claims SET
--             enable_bitmapscan and enable_seqscan off and plan_cache_mode = force_generic_plan:
--             with custom plans every claim was planned again (up to 40 % of a small claim's CPU),
--             and with lagging statistics the planner picked a bitmap scan and sort of the whole
--             backlog; the one generic plan is the ordered claim-index scan.
--           Ends with mbus.secure_queue (privileges, the roles security model).
-- Params:   qname  the queue's name (text; must exist)
-- Returns:  void
-- Locks:    none of its own: CREATE OR REPLACE FUNCTION and secure_queue's ALTER/GRANT/REVOKE
--           update pg_proc rows (two sessions regenerating one queue at once fail with 'tuple
--           concurrently updated'), so its callers hold pg_advisory_xact_lock(1835165041)
-- Callers:  mbus.create_queue, create_consumer, drop_consumer, create_trigger, drop_trigger,
--           drop_queue (for the sources of triggers into it); the installer for every queue after
--           the function files (pgmbus.schema._apply_functions via sql/schema.sql
--           'regenerate_queues'); tests/queues/test_generated_golden.py
CREATE OR REPLACE FUNCTION mbus.regenerate_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $gen$
DECLARE
    q          text := regenerate_queue.qname;
    tbl        text := mbus.generated_name('relation', 'table', regenerate_queue.qname);
    chan       text := 'mbus_q_' || regenerate_queue.qname;
    v_fanout   text := '';
    v_fanoutn  text := '';
    v_triggers text := '';
    v_trign    text := '';
    v_fire     text := '0';
    -- Selectors: a selector that raises must not fail the post. v_sel evaluates every selector
    -- of the message in one exception block, v_sel1 each one again in its own block when that
    -- failed; v_vars declares their result variables.
    v_sel      text := '';
    v_sel1     text := '';
    v_vars     text := '';
    v_ncons    integer := 0;
    v_fn       jsonb := (SELECT jsonb_object_agg(g.what, g.name)
                         FROM mbus.generated_names(regenerate_queue.qname) AS g
                         WHERE g.kind = 'function');
    v_cfn      jsonb;
    v_guard    text;  -- what post_ and postn_ check first: the times are in range
    v_posted   text := format('%L', 'mbus.' || quote_ident(
                                    mbus.generated_name('relation', 'counter', qname)));
    v_cposted  text;  -- a consumer's counter sequences (mbus.queue_counters), as literals
    v_count    text := '';  -- post_: nextval of each consumer's posted counter, one statement
    v_fast     text := '';  -- post_: the one-statement path of a plain message (see below)
    v_nocons   text;  -- post_ and postn_ of a queue that could deliver nowhere: refused
    v_plain    integer[] := '{}';  -- the consumers without a selector (their cids)
    v_pcount   text := '';  -- their posted counters, as CASE arms over the row's consumer
    v_pposted  text[] := '{}';  -- their posted counters' names, as literals
    v_cdone    text;
    v_acked    text := '';  -- ack_<q>: CASE arms bumping the consumed counter of the row's consumer
    -- Claims (per consumer) take two steps. A first statement locks the claimed rows through
    -- the parent (FOR UPDATE SKIP LOCKED, ordered by (vt, id): one ordered Merge Append over the
    -- segments' claim indexes) and keeps their ctids per segment n (v_tn; the lease's dead rows
    -- in v_gn), since a ctid names a row only within its segment. Then one DELETE or UPDATE by
    -- ctid runs for each segment that holds claimed rows, usually one. A single statement with
    -- a data-modifying CTE per segment started all four of them (up to nine for a lease) for
    -- one message (pgbench profile in docs/benchmarks.md). Variant k = 0 of the first
    -- statement reads every segment, k = 1..3 every segment but k, the one rotate_queue is
    -- closing; statements naming a segment run only when it holds claimed rows.
    v_filter   text[] := ARRAY['', '', '', ''];  -- the seg condition that prunes segment k
    v_pick     text;  -- one consumer's claim statements: consumen_, consume_, lease_
    v_pick1    text;
    v_pickl    text;
    v_del1     text;  -- consume_: delete the claimed row from its segment
    v_delsole  text;  -- consumen_: delete the claimed rows, all in one segment
    v_delmany  text;  -- consumen_: delete them segment by segment, gathered in v_rows
    v_bury     text;  -- lease_: the dead rows of each segment to the dmq
    v_upsole   text;  -- lease_: lease the rows, all in one segment
    v_upmany   text;  -- lease_: lease them segment by segment, gathered in v_rows
    v_depwait  text;  -- deps_: the 'await' and 'release' arms, templates over the condition
    v_deprel   text;
    -- The claim query of the batch claims and consume_, priority tier first (v_claimp) or FIFO
    -- only (v_claimn), as format templates: %1$I the queue's table, %2$s the consumer, %3$s
    -- the variant's branch, %4$s its seg condition, %5$s more columns of the claimed row, %6$s
    -- the limit.
    v_claimp   text := $t$
            FROM (SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio%5$s
                                 FROM mbus.%1$I AS s
                                 WHERE s.c = %2$s AND s.priority > 0 AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now)%4$s
                                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                                 LIMIT %6$s
                                 FOR UPDATE SKIP LOCKED) AS tier
                  UNION ALL
                  SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio%5$s
                                 FROM mbus.%1$I AS s
                                 WHERE s.c = %2$s AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now)
                                   AND s.priority = 0%4$s
                                 ORDER BY s.vt, s.id
                                 LIMIT %6$s
                                 FOR UPDATE SKIP LOCKED) AS fifo
                  LIMIT %6$s) AS x;$t$;
    v_claimn   text := $t$
            FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt%5$s
                  FROM mbus.%1$I AS s
                  WHERE s.c = %2$s AND s.vt <= v_now AND (s.expires IS NULL OR s.expires > v_now)%4$s
                  ORDER BY s.vt, s.id
                  LIMIT %6$s
                  FOR UPDATE SKIP LOCKED) AS x;$t$;
    v_segn     text;
    -- The rest of a batch claim's select list (after the ids in claim order) and its INTO: the
    -- ctids per segment, and the counter (consumen_) or the dead rows per segment (lease_).
    v_aggn     text := $t$
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval(%7$L))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n$t$;
    v_aggl     text := $t$
                   array_agg(x.tid) FILTER (WHERE x.seg = 0 AND NOT x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 1 AND NOT x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2 AND NOT x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 3 AND NOT x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0 AND x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 1 AND x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2 AND x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 3 AND x.dead)
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_g0, v_g1, v_g2, v_g3$t$;
    v_ackseg   text;  -- ack_<q>: its DELETE in each segment
    v_ackn     text;  -- ack_<q>: the deleted row's consumer's counter, bumped by the DELETE
    -- Claims first read the queue's segment row: the segment being closed (trusted for 10 s)
    -- and whether the storage upkeep is due (upkept_at upkeep_every old), and, in the same
    -- statement, whether the queue or the consumer is paused (mbus.queue_pause). When the
    -- upkeep is due and the claim starts its transaction (nothing written yet, within 10 ms of
    -- its start), the claim runs mbus.rotate_queue(q, 1) (no wait) first, so consumers that
    -- only call SQL keep the segments rotating. It truncates only when the claim is surely its
    -- transaction's only statement (statement start = transaction start: simple protocol in
    -- autocommit), since a TRUNCATE's lock lasts to commit; otherwise a drained segment is left
    -- to autovacuum and may become current again (mbus.claim_upkeep tells rotate_queue). A
    -- paused claim returns after the upkeep. Per consumer: %1$L the queue, %2$L the consumer.
    v_closing  text;
    v_head     text := $t$
    SELECT CASE WHEN s.closing_since > clock_timestamp() - interval '10 seconds' THEN s.closing END,
           s.upkept_at < clock_timestamp() - s.upkeep_every, s.prioritized,
           EXISTS (SELECT 1 FROM mbus.queue_pause AS p WHERE p.qname = %1$L AND p.cname IN ('', %2$L))
    INTO v_closing, v_due, v_prio, v_paused
    FROM (VALUES (1)) AS one (x) LEFT JOIN mbus.queue_segment AS s ON s.qname = %1$L;
    IF v_due AND pg_current_xact_id_if_assigned() IS NULL
       AND statement_timestamp() - transaction_timestamp() < interval '10 milliseconds'
       AND current_setting('transaction_isolation') = 'read committed' THEN
        PERFORM set_config('mbus.claim_upkeep', 'on', true);
        PERFORM mbus.rotate_queue(%1$L, 1);
        PERFORM set_config('mbus.claim_upkeep', '', true);
        SELECT CASE WHEN s.closing_since > clock_timestamp() - interval '10 seconds'
                    THEN s.closing END
        INTO v_closing FROM mbus.queue_segment AS s WHERE s.qname = %1$L;
    END IF;
    IF v_paused THEN
        RETURN;  -- paused
    END IF;$t$;
    r          record;
    -- Claims that delete deliveries (consume_, consumen_, take_, take_from_) mark the client iid
    -- of what they took consumed by this transaction (mbus.client_iids.consumed_in), so that
    -- its post_<q> with the iid in the same transaction is stored (the seed's retry) while a
    -- producer's retry is not. A CTE over the deleted rows d: one index probe per row.
    v_mark     text := format($t$,
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = %L AND ci.iid = d.iid)$t$,
                          regenerate_queue.qname);
    -- The returned row: qt_model has no priority column, so a priority > 0 comes back as
    -- headers.priority (mbus.to_dmq keeps it); a priority key the row's own priority does not
    -- back (0: posted with one in its headers, or received with one) is removed.
    ret_cols   text := format(
        'q.id AS id, coalesce(q.iid, %1$L || q.id || ''@'' || v_db) AS iid, '
        'q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, '
        'CASE WHEN q.priority > 0 THEN coalesce(q.headers, jsonb_build_object(''enqueue_time'', '
        'q.added) || (SELECT jsonb_build_object(''seenby'', jsonb_build_array(v_db), '
        '''source_db'', v_db, ''destination'', %2$L))) '
        '|| jsonb_build_object(''priority'', q.priority) '
        'WHEN q.headers ? ''priority'' THEN q.headers - ''priority'' '
        'ELSE coalesce(q.headers, jsonb_build_object(''enqueue_time'', q.added) '
        '|| (SELECT jsonb_build_object(''seenby'', jsonb_build_array(v_db), '
        '''source_db'', v_db, ''destination'', %2$L))) END '
        'AS headers, q.properties AS properties, q.data AS data, '
        'q.consume_after AS consume_after, q.attempts AS attempts',
        regenerate_queue.qname || '.', regenerate_queue.qname);
BEGIN
    PERFORM mbus.queue_counter_sequences(q);
    FOR k IN 1 .. 3 LOOP
        v_filter[k + 1] := format(' AND s.seg IN (%s)',
                                  array_to_string(array_remove(ARRAY[0, 1, 2, 3], k), ', '));
    END LOOP;

    -- Fan-out: one INSERT per consumer, guarded by its selector (t is the message).
    FOR r IN SELECT c.cid, c.cname, c.selector FROM mbus.consumer AS c
             WHERE c.qname = q ORDER BY c.cid LOOP
        v_ncons := v_ncons + 1;
        v_cposted := format('%L', 'mbus.' || quote_ident(
                                mbus.generated_name('relation', 'posted_c' || r.cid, q)));
        v_acked := v_acked || format(' WHEN %s THEN nextval(%L)', r.cid,
                                     'mbus.' || quote_ident(
                                         mbus.generated_name('relation', 'consumed_c' || r.cid, q)));
        IF r.selector IS NOT NULL THEN
            v_vars := v_vars || format(E'\n    v_c%s boolean;', r.cid);
            v_sel := v_sel || format(E'\n        v_c%s := coalesce((%s), false);', r.cid,
                                     r.selector);
            v_sel1 := v_sel1 || format($t$
        BEGIN
            v_c%1$s := coalesce((%2$s), false);
        EXCEPTION WHEN OTHERS THEN
            v_c%1$s := false;
            PERFORM mbus.selector_failed(%3$L, %4$L, NULL, t, SQLSTATE, SQLERRM, v_prio);
        END;$t$, r.cid, r.selector, q, r.cname);
        END IF;
        v_fanout := v_fanout || format($t$
    %s INSERT INTO mbus.%I (c, vt, id, iid, added, delayed_until, expires, headers, properties, data,
                           consume_after, seg, priority)
        VALUES (%s, v_vt, t.id, v_iid, t.added, t.delayed_until,
                t.expires, v_hdr, t.properties, t.data, t.consume_after, v_seg, v_prio);
    %s$t$,
            CASE WHEN r.selector IS NULL THEN '' ELSE format('IF v_c%s THEN', r.cid) END,
            tbl, r.cid,
            CASE WHEN r.selector IS NULL THEN '' ELSE 'END IF;' END);
        IF r.selector IS NULL THEN
            v_plain := v_plain || r.cid;
            v_pposted := v_pposted || v_cposted;
            v_pcount := v_pcount || format(' WHEN %s THEN nextval(%s)', r.cid, v_cposted);
        END IF;
        -- counter: deliveries to this consumer (bumped with the others at the end of post_)
        v_count := v_count || E',\n                  ' || CASE WHEN r.selector IS NULL
            THEN format('nextval(%s)', v_cposted)
            ELSE format('CASE WHEN v_c%s THEN nextval(%s) END', r.cid, v_cposted) END;
        v_fanoutn := v_fanoutn || format($t$,
    %s AS (
        INSERT INTO mbus.%I (c, vt, id, iid, added, delayed_until, expires, headers, properties,
                             data, seg, priority)
        SELECT %s, coalesce(t.delayed_until, t.added), t.id, NULL, t.added, t.delayed_until,
               t.expires, t.stored_headers, t.properties, t.data, v_seg, t.priority
        FROM m AS t WHERE %s
        RETURNING nextval(%s))$t$,
            'i' || r.cid, tbl, r.cid, coalesce('(' || r.selector || ')', 'true'), v_cposted);
    END LOOP;

    -- Triggers: copy to the destination queue through its own post function.
    FOR r IN SELECT tr.dst, tr.selector, row_number() OVER (ORDER BY tr.dst) AS k,
                    (SELECT g.name FROM mbus.generated_names(tr.dst) AS g
                     WHERE g.kind = 'function' AND g.what = 'post') AS post_fn
             FROM mbus.queue_trigger AS tr
             WHERE tr.src = q ORDER BY tr.dst LOOP
        IF r.selector IS NOT NULL THEN
            v_vars := v_vars || format(E'\n    v_t%s boolean;', r.k);
            v_sel := v_sel || format(E'\n        v_t%s := coalesce((%s), false);', r.k, r.selector);
            v_sel1 := v_sel1 || format($t$
        BEGIN
            v_t%1$s := coalesce((%2$s), false);
        EXCEPTION WHEN OTHERS THEN
            v_t%1$s := false;
            PERFORM mbus.selector_failed(%3$L, NULL, %4$L, t, SQLSTATE, SQLERRM, v_prio);
        END;$t$, r.k, r.selector, q, r.dst);
        END IF;
        v_triggers := v_triggers || format($t$
    %s
        PERFORM mbus.%I(t.data, t.headers, t.properties, t.delayed_until, t.expires,
                        priority => v_prio);
    %s$t$, CASE WHEN r.selector IS NULL THEN '' ELSE format('IF v_t%s THEN', r.k) END, r.post_fn,
            CASE WHEN r.selector IS NULL THEN '' ELSE 'END IF;' END);
        v_trign := v_trign || format($t$,
    %s AS (
        SELECT count(mbus.%I(t.data, t.headers, t.properties, t.delayed_until, t.expires,
                             priority => t.priority)) AS n
        FROM m AS t WHERE %s)$t$,
            'g_' || r.dst, r.post_fn, coalesce('(' || r.selector || ')', 'true'));
        v_fire := v_fire || format(' + (SELECT %I.n FROM %I)', 'g_' || r.dst, 'g_' || r.dst);
    END LOOP;

    -- consume_after: a message whose dependencies still exist waits (vt infinity).
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
    -- Deliveries that will wait long go to the parking segment 0 (never truncated). The
    -- current segment is looked up inline: mbus.segment_of (the column default) has SET
    -- search_path, so it is never inlined and cost ~85 us of CPU per post (pgbench profile).
    v_seg := CASE WHEN v_vt > t.added + interval '1 minute' THEN 0
                  ELSE coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = %L),
                                1::smallint) END;$t$,
        q, q)
        || CASE WHEN v_sel = '' THEN '' ELSE format($t$
    -- Selectors, all in one block; when one raises, each again in its own: the copy of a
    -- consumer or trigger whose selector raised goes to mbus.dmq, the others are delivered.
    BEGIN%s
    EXCEPTION WHEN OTHERS THEN%s
    END;$t$, v_sel, v_sel1) END || v_fanout || $t$
    END;$t$;

    -- Posts that could never be delivered are refused: a queue without consumers (and without
    -- triggers), expires not in the future, delayed_until not before expires.
    -- postn_ refuses it first; post_ after its iid check, so that a retry of a post committed
    -- with a client iid before the queue lost its consumers stays a no-op returning the iid (an
    -- idempotent retry must not report a committed message as failed).
    v_nocons := CASE WHEN v_ncons = 0 AND v_triggers = '' THEN format($t$
    RAISE EXCEPTION USING ERRCODE = 'MB008',
        MESSAGE = %L;$t$,
        format('queue %s has no consumer to deliver to', q)) ELSE '' END;
    v_guard := $t$
    IF expires IS NOT NULL AND (expires <= now() OR delayed_until >= expires) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = CASE WHEN expires <= now() THEN format('expires %s is in the past', expires)
                ELSE format('delayed_until %s is not before expires', delayed_until) END;
    END IF;
    -- Times from 1900 to 9998, or 'infinity' (never: a message held until taken, as the sagas'
    -- bung): -infinity, BC or far-off times would be stored, then break the client reading
    -- them back (Python's datetime ends at year 9999) after its claim had committed.
    IF delayed_until <> 'infinity'
       AND NOT (delayed_until > '1900-01-01 00:00+00' AND delayed_until < '9999-01-01 00:00+00') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format(
            'delayed_until %s is out of range (from 1900 to 9998, or infinity)', delayed_until);
    END IF;
    IF expires <> 'infinity' AND NOT expires < '9999-01-01 00:00+00' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format(
            'expires %s is out of range (from 1900 to 9998, or infinity)', expires);
    END IF;$t$;

    -- The plain post (no option, a small JSON object as data) of a queue whose consumers take
    -- every message (no selector, no trigger): one INSERT, which also bumps the counters and
    -- asks whether someone waits, and nothing else. It stores what the general path below
    -- stores for such a message (same row, counters and notify); skipping the general path's
    -- two dozen checks and assignments and its three statements saves ~13 us of server CPU of
    -- ~80 per post (pgbench, 4 clients; each PL/pgSQL expression is prepared again in every
    -- transaction). One consumer: INSERT ... VALUES; more: one INSERT ... SELECT of its rows.
    IF v_sel = '' AND v_triggers = '' AND cardinality(v_plain) > 0 THEN
        v_fast := format($t$
    IF headers IS NULL AND properties IS NULL AND delayed_until IS NULL AND expires IS NULL
       AND iid IS NULL AND dedupe_key IS NULL AND consume_after IS NULL AND priority = 0
       AND jsonb_typeof(data) = 'object' AND mbus.json_shallow_by_size(data) THEN$t$)
        || CASE WHEN cardinality(v_plain) = 1 THEN format($t$
        INSERT INTO mbus.%1$I AS q (c, vt, id, added, data, seg)
        VALUES (%5$s, now(), nextval('mbus.msg_id_seq'), now(), %2$I.data,
                coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = %3$L),
                         1::smallint))
        RETURNING q.id, ARRAY[nextval(%4$s), nextval(%6$s)],
                  EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = %3$L)
        INTO v_id, v_count, v_wait;$t$,
            tbl, v_fn->>'post', q, v_posted, v_plain[1], v_pposted[1])
        ELSE format($t$
        v_id := nextval('mbus.msg_id_seq');
        WITH m AS (
            INSERT INTO mbus.%1$I AS q (c, vt, id, added, data, seg)
            SELECT k.c, now(), v_id, now(), %2$I.data,
                   coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = %3$L),
                            1::smallint)
            FROM unnest(%5$L::integer[]) AS k (c)
            RETURNING CASE q.c%6$s END AS n)
        SELECT array_agg(m.n) || nextval(%4$s),
               EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = %3$L)
        INTO v_count, v_wait
        FROM m;$t$,
            tbl, v_fn->>'post', q, v_posted, v_plain, v_pcount) END
        || format($t$
        IF v_wait THEN
            PERFORM pg_notify(%1$L, %2$L);
        END IF;
        RETURN %3$L || v_id || '@' || current_database();
    END IF;$t$, chan, q, q || '.');
    END IF;

    -- post_<q>: the original mbus API's signature; returns the iid.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(
    data jsonb, headers jsonb DEFAULT NULL, properties jsonb DEFAULT NULL,
    delayed_until timestamptz DEFAULT NULL, expires timestamptz DEFAULT NULL, iid text DEFAULT NULL,
    dedupe_key text DEFAULT NULL, consume_after anycompatible DEFAULT NULL::text,
    priority integer DEFAULT 0)
RETURNS text LANGUAGE plpgsql VOLATILE AS %L$f$,
        v_fn->>'post', format($b$
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
    v_pending boolean;  -- a delivery of the iid is pending here%6$s
BEGIN%14$s%7$s
    IF priority IS DISTINCT FROM 0 AND priority IS NOT NULL THEN
        IF priority < 0 OR priority > 32767 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('priority %%s is not in 0..32767', priority);
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
        t.id := mbus.check_iid(iid, %1$L);
    END IF;
    IF dedupe_key IS NOT NULL THEN
        -- Dedupe: while the message last posted with this key is pending, return its iid.
        -- Before the iid is remembered: a post that stores nothing must not use it up.
        v_dup := mbus.dedupe_lock(%1$L, dedupe_key);
        IF EXISTS (SELECT 1 FROM mbus.%8$I AS q WHERE q.id = v_dup.id) THEN
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
            INSERT INTO mbus.client_iids (qname, iid, posted_at) VALUES (%1$L, %10$I.iid, now())
            ON CONFLICT ON CONSTRAINT client_iids_pkey DO NOTHING;
            EXIT WHEN FOUND;
            SELECT ci.posted_at <= now() - mbus.iid_window(),
                   coalesce(ci.consumed_in = pg_current_xact_id_if_assigned(), false)
            INTO v_old, v_again
            FROM mbus.client_iids AS ci WHERE ci.qname = %1$L AND ci.iid = %10$I.iid;
            CONTINUE WHEN NOT FOUND;
            IF v_old OR v_again THEN
                -- no lock before: two retries at once must not wait on each other
                UPDATE mbus.client_iids AS ci SET posted_at = now(), consumed_in = NULL
                WHERE ci.qname = %1$L AND ci.iid = %10$I.iid
                  AND (ci.posted_at <= now() - mbus.iid_window()
                       OR ci.consumed_in = pg_current_xact_id_if_assigned());
                EXIT WHEN FOUND;
                CONTINUE;
            END IF;
            RAISE NOTICE USING ERRCODE = '01M01',
                MESSAGE = format('iid %%s was posted to queue %%s within queues.iid_window: '
                                 'a retry, nothing stored', iid, %1$L),
                HINT = 'only the transaction that consumed the message posts it again';
            RETURN iid;
        END LOOP;
        IF t.id IS NOT NULL THEN
            -- pending under this own-form iid: a no-op; the id held by a message with a
            -- client's iid: that is another message, whose id must stay its own
            CASE (SELECT q.iid IS NULL FROM mbus.%8$I AS q WHERE q.id = t.id LIMIT 1)
            WHEN true THEN
                v_pending := true;
            WHEN false THEN
                RAISE EXCEPTION USING ERRCODE = 'MB006',
                    MESSAGE = format('iid %%s names message %%s of queue %%s, which is another '
                                     'message (posted with an iid of its own)', iid, t.id, %1$L);
            ELSE
                NULL;
            END CASE;
        ELSE
            v_pending := EXISTS (SELECT 1 FROM mbus.%8$I AS q WHERE q.iid = %10$I.iid);
        END IF;
        IF v_pending THEN
            IF v_again THEN
                -- another consumer's delivery of it is still there: storing would give that
                -- consumer a second one, storing nothing would lose this consumer's retry
                RAISE EXCEPTION USING ERRCODE = 'MB006',
                    MESSAGE = format('iid %%s is consumed in this transaction but still pending '
                                     'in queue %%s for another consumer: posting it again would '
                                     'deliver it twice', iid, %1$L),
                    HINT = 'retry with a lease and nack(delay), or post a new message';
            END IF;
            RAISE NOTICE USING ERRCODE = '01M01',
                MESSAGE = format('iid %%s is pending in queue %%s: a retry, nothing stored',
                                 iid, %1$L);
            RETURN iid;
        END IF;
    END IF;%15$s
    IF t.id IS NULL THEN
        t.id := nextval('mbus.msg_id_seq');
        v_iid := iid;
    END IF;
    t.iid := coalesce(v_iid, %2$L || t.id || '@' || current_database());
    IF dedupe_key IS NOT NULL THEN
        PERFORM mbus.dedupe_record(%1$L, dedupe_key, t.id, t.iid);
    END IF;
    t.added := now();
    t.delayed_until := delayed_until;
    t.expires := expires;
    IF headers IS NOT NULL THEN
        t.headers := mbus.stamp_headers(headers, %1$L, t.added);
        v_hdr := t.headers;%12$s
    END IF;
    t.properties := properties;
    t.data := data;
    t.attempts := 0;
%3$s
%4$s
    -- Two IFs, not one AND: a condition with a sub-select is a query, which PostgreSQL
    -- planned again on every post (its custom plan, with v_prio folded, always looked cheaper
    -- than the generic one); `v_prio > 0` alone is a plain expression.
    IF v_prio > 0 THEN
        IF NOT (SELECT s.prioritized FROM mbus.queue_segment AS s WHERE s.qname = %1$L) THEN
            -- the queue's first message with a priority: claims take the priority tier from now on
            UPDATE mbus.queue_segment AS s SET prioritized = true
            WHERE s.qname = %1$L AND NOT s.prioritized;
        END IF;
    END IF;
    -- Counters (messages posted to the queue, deliveries to each consumer) and whether someone
    -- waits on the queue (the notify is sent only then), in one statement.
    SELECT ARRAY[nextval(%11$s)%13$s],
           EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = %1$L)
    INTO v_count, v_wait;
    IF v_wait THEN
        PERFORM pg_notify(%5$L, %1$L);
    END IF;
    RETURN t.iid;
END;
$b$, q, q || '.', v_fanout, v_triggers, chan, v_vars, v_guard, tbl, q || ' ', v_fn->>'post',
        v_posted,
        -- The default headers are not stored (v_hdr NULL) nor returned: built only for
        -- selectors and triggers, which see t (~7-20 us of CPU per post otherwise).
        CASE WHEN v_sel = '' AND v_triggers = '' THEN '' ELSE format($t$
    ELSE
        t.headers := jsonb_build_object('seenby', jsonb_build_array(current_database()),
                                        'source_db', current_database(), 'destination', %L,
                                        'enqueue_time', t.added);$t$, q) END,
        v_count, v_fast, v_nocons));

    -- postn_<q>: many messages in one statement (one INSERT per consumer in data-modifying
    -- CTEs over the same numbered messages m); returns their iids in the order of data.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(
    data jsonb[], headers jsonb[] DEFAULT NULL, properties jsonb[] DEFAULT NULL,
    delayed_until timestamptz DEFAULT NULL, expires timestamptz DEFAULT NULL,
    priority integer[] DEFAULT NULL)
RETURNS SETOF text LANGUAGE plpgsql VOLATILE AS %L$f$,
        v_fn->>'postn', format($b$
DECLARE
    v_now  timestamptz := now();
    v_db   text := current_database();
    v_h    jsonb;
    v_seg  smallint;
    v_iids text[];
BEGIN
    IF data IS NULL OR cardinality(data) = 0 THEN
        RETURN;
    END IF;%s
    IF headers IS NOT NULL AND cardinality(headers) <> cardinality(data)
       OR properties IS NOT NULL AND cardinality(properties) <> cardinality(data)
       OR priority IS NOT NULL AND cardinality(priority) <> cardinality(data) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'headers, properties and priority must have as many elements as data';
    END IF;
    IF priority IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM unnest(priority) AS p(v) WHERE v < 0 OR v > 32767) THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('priority %%s is not in 0..32767',
                                 (SELECT v FROM unnest(priority) AS p(v)
                                  WHERE v < 0 OR v > 32767 LIMIT 1));
        END IF;
        IF EXISTS (SELECT 1 FROM unnest(priority) AS p(v) WHERE v > 0)
           AND NOT (SELECT s.prioritized FROM mbus.queue_segment AS s WHERE s.qname = %L) THEN
            -- the queue's first message with a priority: claims take the priority tier from now on
            UPDATE mbus.queue_segment AS s SET prioritized = true
            WHERE s.qname = %L AND NOT s.prioritized;
        END IF;
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(data) AS d(v) WHERE v IS NULL OR jsonb_typeof(v) <> 'object')
       OR EXISTS (SELECT 1 FROM unnest(headers) AS d(v) WHERE jsonb_typeof(v) <> 'object')
       OR EXISTS (SELECT 1 FROM unnest(properties) AS d(v) WHERE jsonb_typeof(v) <> 'object') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = 'every data, headers and properties element must be a JSON object';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(data) AS d(v) WHERE mbus.json_too_deep(v))
       OR EXISTS (SELECT 1 FROM unnest(headers) AS d(v) WHERE mbus.json_too_deep(v))
       OR EXISTS (SELECT 1 FROM unnest(properties) AS d(v) WHERE mbus.json_too_deep(v)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005',
            MESSAGE = 'a data, headers or properties element is nested more than 100 levels deep';
    END IF;
    IF headers IS NOT NULL
       AND EXISTS (SELECT 1 FROM unnest(headers) AS d(v) WHERE v ? 'consume_after') THEN
        RETURN QUERY SELECT mbus.post_each(%L, data, headers, properties, delayed_until, expires,
                                           priority);
        RETURN;
    END IF;
    v_h := jsonb_build_object('seenby', jsonb_build_array(v_db), 'source_db', v_db,
                              'destination', %L, 'enqueue_time', v_now);
    v_seg := CASE WHEN delayed_until > v_now + interval '1 minute' THEN 0
                  ELSE coalesce((SELECT s.cur FROM mbus.queue_segment AS s WHERE s.qname = %L),
                                1::smallint) END;
    IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS w WHERE w.qname = %L) THEN
        PERFORM pg_notify(%L, %L);
    END IF;
%s
    WITH m AS MATERIALIZED (
        SELECT u.id, %L || u.id || '@' || v_db AS iid, v_now AS added,
               delayed_until AS delayed_until, expires AS expires,
               coalesce(u.sh, v_h) AS headers, u.sh AS stored_headers,
               u.p AS properties, u.d AS data, NULL::text[] AS consume_after, 0 AS attempts,
               NULL::uuid AS lease_token, NULL::timestamptz AS lease_until, u.ord,
               coalesce(u.pr, 0)::smallint AS priority
        FROM (SELECT nextval('mbus.msg_id_seq') AS id, x.d, x.h, x.p, x.pr, x.ord,
                     CASE WHEN x.h IS NOT NULL THEN mbus.stamp_headers(x.h, %L, v_now) END AS sh
              FROM unnest(data, headers, properties, priority)
                   WITH ORDINALITY AS x(d, h, p, pr, ord)) AS u)%s%s
    %s FROM m, (SELECT %s AS n) AS fired WHERE fired.n IS NOT NULL%s
END;
$b$, v_nocons || v_guard, q, q, q, q, q, q, chan, q,
        -- With selectors: the whole batch in one exception block; when it fails (a selector
        -- raised), one by one through post_<q>, which sends such copies to mbus.dmq.
        CASE WHEN v_sel = '' THEN '    RETURN QUERY' ELSE '    BEGIN' END,
        q || '.', q, v_fanoutn, v_trign,
        CASE WHEN v_sel = '' THEN 'SELECT m.iid'
             ELSE 'SELECT array_agg(m.iid ORDER BY m.ord) INTO v_iids' END,
        v_fire,
        CASE WHEN v_sel = '' THEN ' ORDER BY m.ord;' ELSE ';' END || format($t$
    -- counter: messages posted to the queue (after the statement, so a batch that falls back
    -- to post_each is not counted twice). Over unnest(data), not generate_series(1,
    -- cardinality(data)): the generic plan of the latter guesses 1,000 rows, so PostgreSQL kept
    -- planning it again for every batch (14 us per call); unnest's guess is 10 rows.
    PERFORM nextval(%s) FROM unnest(data);$t$, v_posted)
        || CASE WHEN v_sel = '' THEN '' ELSE format($t$
    EXCEPTION WHEN OTHERS THEN
        RETURN QUERY SELECT mbus.post_each(%L, data, headers, properties, delayed_until, expires,
                                           priority);
        RETURN;
    END;
    RETURN QUERY SELECT unnest(v_iids);$t$, q) END));

    -- peek_<q>(msgid): is there a message with that iid (any message when NULL)?
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(msgid text DEFAULT NULL)
RETURNS boolean LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS %L$f$,
        v_fn->>'peek', format($b$
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

    -- deps_<q>(action, p_iid, p_id): consume_after's work on this queue's deliveries, for
    -- mbus.await_deps and mbus.release_deps (which find it through mbus.dep_rows). Static SQL,
    -- so each statement keeps its plan: run with EXECUTE in those functions, each was parsed
    -- and planned again on every call (0.1-0.35 ms apiece, five per dependency). A dependency's
    -- deliveries are found by id when its iid has this queue's own form (p_id given; such an
    -- iid is not stored), else by the iid column.
    --   'await':   lock them FOR SHARE (a consume in progress is waited for, then seen gone) and
    --              mark the unmarked ones waited (their deletion then releases); returns how
    --              many there are
    --   'release': mark the unmarked ones (copies put back since: dmq replay, a re-post with the
    --              old iid); returns 1 when any is left, else 0. No FOR SHARE: a copy being
    --              consumed is marked already and releases at its own commit
    --   'free':    message p_id has no dependency left: its deliveries become claimable (vt
    --              back to delayed_until or added); returns how many changed
    -- Each of 'await' and 'release' is one template, filled in for both ways of finding the
    -- dependency's deliveries (%1$s: the condition on q).
    v_depwait := $t$
            SELECT count(*), count(*) FILTER (WHERE NOT x.waited) INTO v_n, v_new
            FROM (SELECT q.waited FROM mbus.%2$I AS q WHERE %1$s FOR SHARE) AS x;
            IF v_new > 0 THEN
                UPDATE mbus.%2$I AS q SET waited = true WHERE %1$s AND NOT q.waited;
            END IF;$t$;
    -- Read first: an UPDATE through the parent starts on every segment and opens all their
    -- indexes even when no row is left to mark (the usual case). When one is, the UPDATE waits
    -- for a transaction consuming it, and what is left is read again after it: an unmarked
    -- copy consumed meanwhile releases nothing at its own commit.
    v_deprel := $t$
            SELECT count(*), count(*) FILTER (WHERE NOT q.waited) INTO v_n, v_new
            FROM mbus.%2$I AS q WHERE %1$s;
            IF v_new > 0 THEN
                UPDATE mbus.%2$I AS q SET waited = true WHERE %1$s AND NOT q.waited;
                RETURN (EXISTS (SELECT 1 FROM mbus.%2$I AS q WHERE %1$s))::integer;
            END IF;$t$;
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(action text, p_iid text, p_id bigint)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS %L$f$,
        v_fn->>'deps', format($b$
DECLARE
    v_n   bigint;
    v_new bigint;
BEGIN
    CASE action
    WHEN 'await' THEN
        IF p_id IS NOT NULL THEN%1$s
        ELSE%2$s
        END IF;
        RETURN v_n;
    WHEN 'release' THEN
        IF p_id IS NOT NULL THEN%3$s
        ELSE%4$s
        END IF;
        RETURN (v_n > 0)::integer;
    WHEN 'free' THEN
        -- post_<q> puts a waiting message (vt infinity) in the parking segment 0; through the
        -- parent only when none of its deliveries is there (taken, or parked elsewhere by an
        -- older version)
        UPDATE %6$s AS q SET vt = coalesce(q.delayed_until, q.added)
        WHERE q.id = p_id AND q.vt = 'infinity';
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n = 0 THEN
            UPDATE mbus.%5$I AS q SET vt = coalesce(q.delayed_until, q.added)
            WHERE q.id = p_id AND q.vt = 'infinity';
            GET DIAGNOSTICS v_n = ROW_COUNT;
        END IF;
        RETURN v_n;
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown consume_after action %%L', action);
    END CASE;
END;
$b$, format(v_depwait, 'q.id = p_id AND q.iid IS NULL', tbl),
     format(v_depwait, 'q.iid = p_iid', tbl),
     format(v_deprel, 'q.id = p_id AND q.iid IS NULL', tbl),
     format(v_deprel, 'q.iid = p_iid', tbl),
     tbl, 'mbus.' || quote_ident(
         mbus.generated_name('relation', 'segment0', regenerate_queue.qname))));

    -- clear_queue_<q>(p_now): delete expired deliveries; returns how many.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(p_now timestamptz DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS %L$f$,
        v_fn->>'clear_queue', format($b$
DECLARE
    v_count bigint;
BEGIN
    DELETE FROM mbus.%I AS q
    WHERE q.expires <= coalesce(mbus.given_clock(p_now), clock_timestamp());
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$b$, tbl));

    -- take_<q>(msgid): take the message with that iid away from every consumer (mbus.take).
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(msgid text, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS %L$f$,
        v_fn->>'take', format($b$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
    v_id  bigint := mbus.iid_id(msgid, %3$L);
BEGIN
    IF v_id IS NOT NULL THEN
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.%1$I AS q
            WHERE q.id = v_id AND q.iid IS NULL AND (q.expires IS NULL OR q.expires > v_now)
            RETURNING %2$s)%4$s
        SELECT DISTINCT ON (d.id) d.*, NULL::uuid, NULL::timestamptz FROM d ORDER BY d.id;
    ELSE
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.%1$I AS q
            WHERE q.iid = msgid AND (q.expires IS NULL OR q.expires > v_now)
              -- one message: should two pending ones share the iid, the oldest
              AND q.id = (SELECT min(x.id) FROM mbus.%1$I AS x
                          WHERE x.iid = msgid AND (x.expires IS NULL OR x.expires > v_now))
            RETURNING %2$s)%4$s
        SELECT DISTINCT ON (d.id) d.*, NULL::uuid, NULL::timestamptz FROM d ORDER BY d.id;
    END IF;
END;
$b$, tbl, ret_cols, q, v_mark));

    -- ack_<q>(token): the leased message is done; MB007 when the token no longer owns it. A
    -- lease token ends in the number of its segment (lease_<q>_by_<c>), so the DELETE probes
    -- that segment's lease-token index alone; a token from before that scheme, or a miss, goes
    -- through the parent (every segment). The consumer's counter is bumped by the DELETE.
    v_ackseg := '';
    v_ackn := CASE WHEN v_acked = '' THEN 'NULL::bigint' ELSE format('CASE q.c%s END', v_acked) END;
    FOR n IN 0 .. 3 LOOP
        v_ackseg := v_ackseg || format($t$
    WHEN '%1$s' THEN
        DELETE FROM %2$s AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, %3$s INTO v_c, v_n;$t$,
            n, 'mbus.' || quote_ident(
                mbus.generated_name('relation', 'segment' || n, regenerate_queue.qname)), v_ackn);
    END LOOP;
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(token uuid, p_now timestamptz DEFAULT NULL)
RETURNS void LANGUAGE plpgsql VOLATILE AS %L$f$,
        v_fn->>'ack', format($b$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_c   integer;
    v_n   bigint;  -- counter: deliveries the row's consumer consumed
BEGIN
    CASE right(token::text, 1)%4$s
    ELSE
        NULL;
    END CASE;
    IF v_c IS NULL THEN
        DELETE FROM mbus.%1$I AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, %3$s INTO v_c, v_n;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'MB007',
                MESSAGE = format('lease %%s on queue %%s is no longer held', token, %2$L);
        END IF;
    END IF;
END;
$b$, tbl, q, v_ackn, v_ackseg));

    -- nack_<q>(token, delay): give the leased message back, visible again after delay.
    EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(token uuid, delay interval DEFAULT '0'::interval,
                                   p_now timestamptz DEFAULT NULL)
RETURNS void LANGUAGE plpgsql VOLATILE AS %L$f$,
        v_fn->>'nack', format($b$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
BEGIN
    IF delay IS NULL OR delay < '0'::interval OR delay > '100 years'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('nack delay %%s is out of range (>= 0, at most 100 years)', delay);
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
        v_fn->>'extend', format($b$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
    v_end timestamptz;
BEGIN
    IF lease IS NULL OR lease <= '0'::interval OR lease > '100 years'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease %%s is out of range (> 0, at most 100 years)', lease);
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
        v_fn->>'bury', format($b$
DECLARE
    v_id bigint;
    v_db text := current_database();
BEGIN
    WITH d AS (
        DELETE FROM mbus.%I AS q
        WHERE q.lease_token = token AND q.vt > coalesce(mbus.given_clock(p_now), clock_timestamp())
        RETURNING q.c AS c, q.priority AS priority, %s)
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                          properties, data, consume_after, attempts, reason, priority)
    SELECT %L, c.cname, d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers,
           d.properties, d.data, d.consume_after, d.attempts, coalesce(reason, 'buried'),
           d.priority
    FROM d LEFT JOIN mbus.consumer AS c ON c.cid = d.c
    RETURNING dmq_id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %%s on queue %%s is no longer held', token, %L);
    END IF;
    RETURN v_id;
END;
$b$, tbl, ret_cols, q, q));

    -- Per consumer: consume, consumen, lease, take_from. Claims take two steps (see v_pick
    -- above): lock the claimed rows through the parent, then delete or update them by ctid in
    -- each segment that holds some. While rotate_queue closes a drained segment k, claims run
    -- the variant whose constant seg condition prunes k at plan time: no statement they run
    -- names k, so new claims do not lock it and rotate_queue can truncate it although
    -- consumers' transactions overlap.
    FOR r IN SELECT c.cid, c.cname FROM mbus.consumer AS c WHERE c.qname = q LOOP
        SELECT jsonb_object_agg(g.what, g.name) INTO v_cfn
        FROM mbus.generated_names(q, r.cname) AS g WHERE g.kind = 'function';
        -- The segment row, the upkeep and the pause (mbus.pause_queue) check; see v_head.
        v_closing := format(v_head, q, r.cname);
        -- Counter: deliveries this consumer consumed (ack_<q> counts those of leases), bumped
        -- by the claim statement for each row it returns.
        v_cdone := 'mbus.' || quote_ident(
                       mbus.generated_name('relation', 'consumed_c' || r.cid, q));
        v_pick := '';
        v_pick1 := '';
        v_pickl := '';
        v_del1 := '';
        v_delsole := '';
        v_delmany := '';
        v_bury := '';
        v_upsole := '';
        v_upmany := '';
        FOR n IN 0 .. 3 LOOP
            v_segn := 'mbus.' || quote_ident(
                          mbus.generated_name('relation', 'segment' || n, regenerate_queue.qname));
            v_del1 := v_del1 || format($t$
    %1$s v_seg = %2$s THEN
        RETURN QUERY
        WITH d AS (DELETE FROM %3$s AS q WHERE q.ctid = v_tid
                   RETURNING %4$s, NULL::uuid AS lease_token, NULL::timestamptz AS lease_until)%5$s
        SELECT d.* FROM d;$t$,
                CASE n WHEN 0 THEN 'IF' ELSE 'ELSIF' END, n, v_segn, ret_cols, v_mark);
            v_delsole := v_delsole || format($t$
        %1$s v_t%2$s IS NOT NULL THEN
            RETURN QUERY
            WITH d AS (DELETE FROM %3$s AS q WHERE q.ctid = ANY (v_t%2$s)
                       RETURNING q.vt AS claim_vt, q.priority AS claim_prio, %4$s)%5$s
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties,
                   d.data, d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
            FROM d ORDER BY d.claim_prio DESC, d.claim_vt, d.id;$t$,
                CASE n WHEN 0 THEN 'IF' ELSE 'ELSIF' END, n, v_segn, ret_cols, v_mark);
            v_delmany := v_delmany || format($t$
        IF v_t%1$s IS NOT NULL THEN
            WITH d AS (DELETE FROM %2$s AS q WHERE q.ctid = ANY (v_t%1$s)
                       RETURNING %3$s, NULL::uuid AS lease_token,
                                 NULL::timestamptz AS lease_until)%4$s
            SELECT v_rows || array_agg(d::mbus.qt_model) INTO v_rows FROM d;
        END IF;$t$, n, v_segn, ret_cols, v_mark);
            v_bury := v_bury || format($t$
    IF v_g%1$s IS NOT NULL THEN  -- delivered max_attempts times already: to the dmq
        -- A lease token still set: the last delivery's lease ended without ack, nack or bury
        -- (an ack lost while the database was down, a worker killed), not a handler failure.
        WITH g AS (DELETE FROM %2$s AS q WHERE q.ctid = ANY (v_g%1$s)
                   RETURNING %3$s, q.priority AS priority,
                             q.lease_token IS NOT NULL AS unreported)
        INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                              properties, data, consume_after, attempts, reason, priority,
                              unreported)
        SELECT %4$L, %5$L, g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
               g.properties, g.data, g.consume_after, g.attempts,
               CASE WHEN g.unreported
                    THEN format('max_attempts (%%s) reached: the last of %%s deliveries never '
                                'reported (its lease ended without ack, nack or bury)',
                                max_attempts, g.attempts)
                    ELSE format('max_attempts (%%s) exceeded', max_attempts) END,
               g.priority, g.unreported
        FROM g;
    END IF;$t$, n, v_segn, ret_cols, q, r.cname);
            v_upsole := v_upsole || format($t$
        %1$s v_t%2$s IS NOT NULL THEN
            RETURN QUERY
            WITH u AS (UPDATE %3$s AS q
                       SET vt = v_now + lease, attempts = q.attempts + 1,
                           lease_token = (left(gen_random_uuid()::text, 35) || '%2$s')::uuid
                       WHERE q.ctid = ANY (v_t%2$s)
                       RETURNING %4$s, q.lease_token, q.vt)
            SELECT u.* FROM u JOIN unnest(v_ids) WITH ORDINALITY AS o(id, ord) ON o.id = u.id
            ORDER BY o.ord;$t$,
                CASE n WHEN 0 THEN 'IF' ELSE 'ELSIF' END, n, v_segn, ret_cols);
            v_upmany := v_upmany || format($t$
        IF v_t%1$s IS NOT NULL THEN
            WITH u AS (UPDATE %2$s AS q
                       SET vt = v_now + lease, attempts = q.attempts + 1,
                           lease_token = (left(gen_random_uuid()::text, 35) || '%1$s')::uuid
                       WHERE q.ctid = ANY (v_t%1$s)
                       RETURNING %3$s, q.lease_token, q.vt)
            SELECT v_rows || array_agg(u::mbus.qt_model) INTO v_rows FROM u;
        END IF;$t$, n, v_segn, ret_cols);
        END LOOP;
        FOR k IN 0 .. 3 LOOP
            v_pick := v_pick || format($t$
    %3$s
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT array_agg(x.id ORDER BY x.claim_prio DESC, x.claim_vt, x.id),$t$
                || v_aggn || v_claimp || $t$
        ELSE
            SELECT array_agg(x.id ORDER BY x.claim_vt, x.id),$t$
                || v_aggn || v_claimn || $t$
        END IF;$t$,
                tbl, r.cid,
                CASE k WHEN 0 THEN 'IF v_closing IS NULL THEN' WHEN 3 THEN 'ELSE'
                       ELSE format('ELSIF v_closing = %s THEN', k) END,
                v_filter[k + 1], '', 'amt', v_cdone);
            v_pick1 := v_pick1 || format($t$
    %3$s
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT x.seg, x.tid, nextval(%7$L) INTO v_seg, v_tid, v_n$t$ || v_claimp || $t$
        ELSE
            SELECT x.seg, x.tid, nextval(%7$L) INTO v_seg, v_tid, v_n$t$ || v_claimn || $t$
        END IF;$t$,
                tbl, r.cid,
                CASE k WHEN 0 THEN 'IF v_closing IS NULL THEN' WHEN 3 THEN 'ELSE'
                       ELSE format('ELSIF v_closing = %s THEN', k) END,
                v_filter[k + 1], '', '1', v_cdone);
            v_pickl := v_pickl || format($t$
    %3$s
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT array_agg(x.id ORDER BY x.claim_prio DESC, x.claim_vt, x.id),$t$
                || v_aggl || v_claimp || $t$
        ELSE
            SELECT array_agg(x.id ORDER BY x.claim_vt, x.id),$t$
                || v_aggl || v_claimn || $t$
        END IF;$t$,
                tbl, r.cid,
                CASE k WHEN 0 THEN 'IF v_closing IS NULL THEN' WHEN 3 THEN 'ELSE'
                       ELSE format('ELSIF v_closing = %s THEN', k) END,
                v_filter[k + 1],
                E',\n                       s.attempts >= coalesce(max_attempts, 2147483647) AS dead',
                'amt');
        END LOOP;

        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(amt integer, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            v_cfn->>'consumen', format($b$
DECLARE
    v_now     timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db      text := current_database();
    v_closing smallint;
    v_due     boolean;
    v_prio    boolean;
    v_paused  boolean;
    v_n       bigint;    -- counter: deliveries consumed
    v_ids     bigint[];  -- the claimed messages, in claim order
    v_t0      tid[];     -- their ctids in segment 0, 1, 2, 3
    v_t1      tid[];
    v_t2      tid[];
    v_t3      tid[];
    v_rows    mbus.qt_model[];
BEGIN
    IF amt IS NULL OR amt < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'amt must be a non-negative integer';
    END IF;%2$s%1$s
    END IF;
    IF v_ids IS NULL THEN
        RETURN;  -- nothing to claim
    END IF;
    -- The TID scans delete in physical order: the rows go back in claim order.
    IF num_nonnulls(v_t0, v_t1, v_t2, v_t3) = 1 THEN%3$s
        END IF;
    ELSE%4$s
        RETURN QUERY SELECT r.* FROM unnest(v_rows) AS r
            JOIN unnest(v_ids) WITH ORDINALITY AS o(id, ord) ON o.id = r.id ORDER BY o.ord;
    END IF;
END;
$b$, v_pick, v_closing, v_delsole, v_delmany));

        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            v_cfn->>'consume', format($b$
DECLARE
    v_now     timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db      text := current_database();
    v_closing smallint;
    v_due     boolean;
    v_prio    boolean;
    v_paused  boolean;
    v_n       bigint;    -- counter: deliveries consumed
    v_seg     smallint;  -- the claimed message's segment and ctid
    v_tid     tid;
BEGIN%2$s%1$s
    END IF;
    IF v_tid IS NULL THEN
        RETURN;  -- nothing to claim
    END IF;%3$s
    END IF;
END;
$b$, v_pick1, v_closing, v_del1));

        -- lease_<q>_by_<c>: claim up to amt with a visibility timeout; a message already
        -- delivered max_attempts times goes to the dmq instead of being returned.
        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(amt integer, lease interval, max_attempts integer DEFAULT NULL,
                                   p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS %L$f$,
            v_cfn->>'lease', format($b$
DECLARE
    v_now     timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db      text := current_database();
    v_closing smallint;
    v_due     boolean;
    v_prio    boolean;
    v_paused  boolean;
    v_ids     bigint[];  -- the claimed messages, in claim order
    v_t0      tid[];     -- the ctids to lease in segment 0, 1, 2, 3
    v_t1      tid[];
    v_t2      tid[];
    v_t3      tid[];
    v_g0      tid[];     -- the ctids to bury (max_attempts reached) in segment 0, 1, 2, 3
    v_g1      tid[];
    v_g2      tid[];
    v_g3      tid[];
    v_rows    mbus.qt_model[];
BEGIN
    IF amt IS NULL OR amt < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'amt must be a non-negative integer';
    END IF;
    IF lease IS NULL OR lease <= '0'::interval OR lease > '100 years'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease %%s is out of range (> 0, at most 100 years)', lease);
    END IF;
    IF max_attempts IS NOT NULL AND max_attempts < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'max_attempts must be >= 1';
    END IF;%2$s%1$s
    END IF;
    IF v_ids IS NULL THEN
        RETURN;  -- nothing to claim
    END IF;%3$s
    -- The TID scans update in physical order: the rows go back in claim order.
    IF num_nonnulls(v_t0, v_t1, v_t2, v_t3) = 1 THEN%4$s
        END IF;
    ELSIF num_nonnulls(v_t0, v_t1, v_t2, v_t3) > 1 THEN%5$s
        RETURN QUERY SELECT r.* FROM unnest(v_rows) AS r
            JOIN unnest(v_ids) WITH ORDINALITY AS o(id, ord) ON o.id = r.id ORDER BY o.ord;
    END IF;
END;
$b$, v_pickl, v_closing, v_bury, v_upsole, v_upmany));

        EXECUTE format($f$
CREATE OR REPLACE FUNCTION mbus.%I(msgid text, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS %L$f$,
            v_cfn->>'take_from', format($b$
DECLARE
    v_id bigint := mbus.iid_id(msgid, %4$L);
    v_db text := current_database();
BEGIN
    -- A plain DELETE waits for a transaction that holds the row (the seed: take blocks).
    IF v_id IS NOT NULL THEN
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.%1$I AS q
            WHERE q.c = %2$s AND q.id = v_id AND q.iid IS NULL
              AND (q.expires IS NULL
                   OR q.expires > coalesce(mbus.given_clock(p_now), clock_timestamp()))
            RETURNING %3$s, NULL::uuid AS lease_token, NULL::timestamptz AS lease_until)%5$s
        SELECT d.* FROM d;
    ELSE
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.%1$I AS q
            WHERE q.c = %2$s AND q.iid = msgid
              AND (q.expires IS NULL
                   OR q.expires > coalesce(mbus.given_clock(p_now), clock_timestamp()))
            RETURNING %3$s, NULL::uuid AS lease_token, NULL::timestamptz AS lease_until)%5$s
        SELECT d.* FROM d;
    END IF;
END;
$b$, tbl, r.cid, ret_cols, q, v_mark));
    END LOOP;
    PERFORM mbus.secure_queue(q);
END;
$gen$;
