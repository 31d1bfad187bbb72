-- Function: mbus.regenerate_consume(qname, names)
--
-- Purpose:  Make the claims of each consumer c of qname: consume_<q>_by_<c> (one message),
--           consumen_<q>_by_<c>(amt), lease_<q>_by_<c>(amt, lease, max_attempts) (a message
--           delivered max_attempts times goes to mbus.dmq instead) and take_from_<q>_by_<c>(msgid).
--           A claim reads the segment row (closing segment, upkeep due, pause), runs
--           mbus.rotate_queue when due, locks its rows through the parent in (priority,) vt, id
--           order from the claim floor (mbus.floor_guard) in one of four variants (k = 0 every
--           segment, 1..3 all but the closing k), then deletes or leases them by ctid in each
--           segment that holds some and returns them in claim order.
-- Params:   qname  the queue's name (text; must exist)
--           names  mbus.regenerate_names(qname)
-- Returns:  void
-- Locks:    none of its own (CREATE OR REPLACE FUNCTION; see mbus.regenerate_queue)
-- Calls:    mbus.fill_template, mbus.generated_name, mbus.generated_names, mbus.given_clock,
--           mbus.iid_id, mbus.rotate_queue
-- Tables:   mbus.consumer, mbus.dmq, mbus.queue_pause, mbus.queue_segment
-- Design:   docs/DESIGN.md#decisions-and-the-figures-behind-them
CREATE OR REPLACE FUNCTION mbus.regenerate_consume(qname text, names jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $gen$
DECLARE
    -- The claim query of the batch claims and consume_, priority tier first (claimp) or FIFO
    -- only (claimn): {cid} the consumer, {branch} the variant's branch, {filter} its seg
    -- condition, {cols} more columns of the claimed row, {limit} the limit.
    v_claimp  text := $t$
            FROM (SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio{cols}
                                 FROM mbus.{tbl} AS s
                                 WHERE s.c = {cid} AND s.priority > 0 AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now){filter}
                                 ORDER BY s.c, s.priority DESC, s.vt, s.id
                                 LIMIT {limit}
                                 FOR UPDATE SKIP LOCKED) AS tier
                  UNION ALL
                  SELECT * FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt,
                                        s.priority AS claim_prio{cols}
                                 FROM mbus.{tbl} AS s
                                 WHERE s.c = {cid} AND s.vt >= v_floor AND s.vt <= v_now
                                   AND (s.expires IS NULL OR s.expires > v_now)
                                   AND s.priority = 0{filter}
                                 ORDER BY s.vt, s.id
                                 LIMIT {limit}
                                 FOR UPDATE SKIP LOCKED) AS fifo
                  LIMIT {limit}) AS x;$t$;
    v_claimn  text := $t$
            FROM (SELECT s.seg, s.ctid AS tid, s.id, s.vt AS claim_vt{cols}
                  FROM mbus.{tbl} AS s
                  WHERE s.c = {cid} AND s.vt >= v_floor AND s.vt <= v_now
                    AND (s.expires IS NULL OR s.expires > v_now){filter}
                  ORDER BY s.vt, s.id
                  LIMIT {limit}
                  FOR UPDATE SKIP LOCKED) AS x;$t$;
    -- The rest of a batch claim's select list (after the ids in claim order) and its INTO: the
    -- ctids per segment, and the counter (consumen_) or the dead rows per segment (lease_).
    v_aggn    text := $t$
                   array_agg(x.tid) FILTER (WHERE x.seg = 0), array_agg(x.tid) FILTER (WHERE x.seg = 1),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2), array_agg(x.tid) FILTER (WHERE x.seg = 3),
                   count(nextval({consumed}))  -- counter: deliveries consumed
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_n$t$;
    v_aggl    text := $t$
                   array_agg(x.tid) FILTER (WHERE x.seg = 0 AND NOT x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 1 AND NOT x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2 AND NOT x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 3 AND NOT x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 0 AND x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 1 AND x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 2 AND x.dead),
                   array_agg(x.tid) FILTER (WHERE x.seg = 3 AND x.dead)
            INTO v_ids, v_t0, v_t1, v_t2, v_t3, v_g0, v_g1, v_g2, v_g3$t$;
    v_c       jsonb;  -- names and the consumer's own
    v_s       jsonb;  -- v_c and one segment's or variant's
    v_pick    text;  -- the consumer's claim statements: consumen_, consume_, lease_
    v_pick1   text;
    v_pickl   text;
    v_del1    text;  -- consume_: delete the claimed row from its segment
    v_delsole text;  -- consumen_: delete the claimed rows, all in one segment
    v_delmany text;  -- consumen_: delete them segment by segment, gathered in v_rows
    v_bury    text;  -- lease_: the dead rows of each segment to the dmq
    v_upsole  text;  -- lease_: lease the rows, all in one segment
    v_upmany  text;  -- lease_: lease them segment by segment, gathered in v_rows
    r         record;
BEGIN
    FOR r IN SELECT c.cid, c.cname FROM mbus.consumer AS c
             WHERE c.qname = regenerate_consume.qname LOOP
        SELECT names || jsonb_object_agg('fn_' || g.what, quote_ident(g.name)) INTO v_c
        FROM mbus.generated_names(regenerate_consume.qname, r.cname) AS g
        WHERE g.kind = 'function';
        v_c := v_c || jsonb_build_object(
            'cid', r.cid::text,
            'cname', quote_literal(r.cname),
            'floor', quote_literal('mbus.' || quote_ident(
                         mbus.generated_name('relation', 'floor', qname))),
            -- counter: deliveries this consumer consumed (ack_<q> counts those of leases)
            'consumed', quote_literal('mbus.' || quote_ident(
                            mbus.generated_name('relation', 'consumed_c' || r.cid, qname))));
        -- the segment row, the upkeep and the pause (mbus.pause_queue) check
        v_c := v_c || jsonb_build_object('head', mbus.fill_template($t$
    SELECT CASE WHEN s.closing_since > clock_timestamp() - interval '10 seconds' THEN s.closing END,
           s.upkept_at < clock_timestamp() - s.upkeep_every, s.prioritized,
           EXISTS (SELECT 1 FROM mbus.queue_pause AS p WHERE p.qname = {q} AND p.cname IN ('', {cname}))
    INTO v_closing, v_due, v_prio, v_paused
    FROM (VALUES (1)) AS one (x) LEFT JOIN mbus.queue_segment AS s ON s.qname = {q};
    IF v_due AND pg_current_xact_id_if_assigned() IS NULL
       AND statement_timestamp() - transaction_timestamp() < interval '10 milliseconds'
       AND current_setting('transaction_isolation') = 'read committed' THEN
        PERFORM set_config('mbus.claim_upkeep', 'on', true);
        PERFORM mbus.rotate_queue({q}, 1);
        PERFORM set_config('mbus.claim_upkeep', '', true);
        SELECT CASE WHEN s.closing_since > clock_timestamp() - interval '10 seconds'
                    THEN s.closing END
        INTO v_closing FROM mbus.queue_segment AS s WHERE s.qname = {q};
    END IF;
    IF v_paused THEN
        RETURN;  -- paused
    END IF;
    -- The claim floor (mbus.floor_guard): no live delivery lies below it, so the FIFO scan
    -- starts there, past the consumed entries a held xmin horizon keeps.
    v_floor := coalesce(to_timestamp(0)
                        + pg_sequence_last_value({floor}::regclass) * interval '1 microsecond',
                        '-infinity');$t$, v_c));
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
            v_s := v_c || jsonb_build_object(
                'n', n::text,
                'if_elsif', CASE n WHEN 0 THEN 'IF' ELSE 'ELSIF' END,
                'seg', v_c ->> ('seg' || n));
            v_del1 := v_del1 || mbus.fill_template($t$
    {if_elsif} v_seg = {n} THEN
        RETURN QUERY
        WITH d AS (DELETE FROM {seg} AS q WHERE q.ctid = v_tid
                   RETURNING {ret_cols}, NULL::uuid AS lease_token, NULL::timestamptz AS lease_until){mark}
        SELECT d.* FROM d;$t$, v_s);
            v_delsole := v_delsole || mbus.fill_template($t$
        {if_elsif} v_t{n} IS NOT NULL THEN
            RETURN QUERY
            WITH d AS (DELETE FROM {seg} AS q WHERE q.ctid = ANY (v_t{n})
                       RETURNING q.vt AS claim_vt, q.priority AS claim_prio, {ret_cols}){mark}
            SELECT d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers, d.properties,
                   d.data, d.consume_after, d.attempts, NULL::uuid, NULL::timestamptz
            FROM d ORDER BY d.claim_prio DESC, d.claim_vt, d.id;$t$, v_s);
            v_delmany := v_delmany || mbus.fill_template($t$
        IF v_t{n} IS NOT NULL THEN
            WITH d AS (DELETE FROM {seg} AS q WHERE q.ctid = ANY (v_t{n})
                       RETURNING {ret_cols}, NULL::uuid AS lease_token,
                                 NULL::timestamptz AS lease_until){mark}
            SELECT v_rows || array_agg(d::mbus.qt_model) INTO v_rows FROM d;
        END IF;$t$, v_s);
            v_bury := v_bury || mbus.fill_template($t$
    IF v_g{n} IS NOT NULL THEN  -- delivered max_attempts times already: to the dmq
        -- A lease token still set: the last delivery's lease ended without ack, nack or bury
        -- (an ack lost while the database was down, a worker killed), not a handler failure.
        WITH g AS (DELETE FROM {seg} AS q WHERE q.ctid = ANY (v_g{n})
                   RETURNING {ret_cols}, q.priority AS priority,
                             q.lease_token IS NOT NULL AS unreported)
        INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                              properties, data, consume_after, attempts, reason, priority,
                              unreported)
        SELECT {q}, {cname}, g.id, g.iid, g.added, g.delayed_until, g.expires, g.headers,
               g.properties, g.data, g.consume_after, g.attempts,
               CASE WHEN g.unreported
                    THEN format('max_attempts (%s) reached: the last of %s deliveries never '
                                'reported (its lease ended without ack, nack or bury)',
                                max_attempts, g.attempts)
                    ELSE format('max_attempts (%s) exceeded', max_attempts) END,
               g.priority, g.unreported
        FROM g;
    END IF;$t$, v_s);
            v_upsole := v_upsole || mbus.fill_template($t$
        {if_elsif} v_t{n} IS NOT NULL THEN
            RETURN QUERY
            WITH u AS (UPDATE {seg} AS q
                       SET vt = v_now + lease, attempts = q.attempts + 1,
                           lease_token = (left(gen_random_uuid()::text, 35) || '{n}')::uuid
                       WHERE q.ctid = ANY (v_t{n})
                       RETURNING {ret_cols}, q.lease_token, q.vt)
            SELECT u.* FROM u JOIN unnest(v_ids) WITH ORDINALITY AS o(id, ord) ON o.id = u.id
            ORDER BY o.ord;$t$, v_s);
            v_upmany := v_upmany || mbus.fill_template($t$
        IF v_t{n} IS NOT NULL THEN
            WITH u AS (UPDATE {seg} AS q
                       SET vt = v_now + lease, attempts = q.attempts + 1,
                           lease_token = (left(gen_random_uuid()::text, 35) || '{n}')::uuid
                       WHERE q.ctid = ANY (v_t{n})
                       RETURNING {ret_cols}, q.lease_token, q.vt)
            SELECT v_rows || array_agg(u::mbus.qt_model) INTO v_rows FROM u;
        END IF;$t$, v_s);
        END LOOP;
        FOR k IN 0 .. 3 LOOP
            v_s := v_c || jsonb_build_object(
                'branch', CASE k WHEN 0 THEN 'IF v_closing IS NULL THEN' WHEN 3 THEN 'ELSE'
                                 ELSE format('ELSIF v_closing = %s THEN', k) END,
                -- the seg condition that prunes segment k
                'filter', CASE k WHEN 0 THEN '' ELSE format(' AND s.seg IN (%s)',
                    array_to_string(array_remove(ARRAY[0, 1, 2, 3], k), ', ')) END,
                'cols', '',
                'limit', 'amt');
            v_pick := v_pick || mbus.fill_template($t$
    {branch}
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT array_agg(x.id ORDER BY x.claim_prio DESC, x.claim_vt, x.id),$t$
                || v_aggn || v_claimp || $t$
        ELSE
            SELECT array_agg(x.id ORDER BY x.claim_vt, x.id),$t$
                || v_aggn || v_claimn || $t$
        END IF;$t$, v_s);
            v_pick1 := v_pick1 || mbus.fill_template(
                $t$
    {branch}
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT x.seg, x.tid, nextval({consumed}) INTO v_seg, v_tid, v_n$t$
                || v_claimp || $t$
        ELSE
            SELECT x.seg, x.tid, nextval({consumed}) INTO v_seg, v_tid, v_n$t$
                || v_claimn || $t$
        END IF;$t$,
                v_s || jsonb_build_object('limit', '1'));
            v_pickl := v_pickl || mbus.fill_template($t$
    {branch}
        IF v_prio THEN  -- the priority tier first, then the priority-0 messages in FIFO
            SELECT array_agg(x.id ORDER BY x.claim_prio DESC, x.claim_vt, x.id),$t$
                || v_aggl || v_claimp || $t$
        ELSE
            SELECT array_agg(x.id ORDER BY x.claim_vt, x.id),$t$
                || v_aggl || v_claimn || $t$
        END IF;$t$,
                v_s || jsonb_build_object('cols',
                    E',\n                       '
                    || 's.attempts >= coalesce(max_attempts, 2147483647) AS dead'));
        END LOOP;
        v_c := v_c || jsonb_build_object(
            'pick', v_pick, 'pick1', v_pick1, 'pickl', v_pickl, 'del1', v_del1,
            'delsole', v_delsole, 'delmany', v_delmany, 'bury', v_bury, 'upsole', v_upsole,
            'upmany', v_upmany);

        EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_consumen}(amt integer, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS {body}$f$,
    jsonb_build_object(
            'fn_consumen', v_c ->> 'fn_consumen',
            'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_now     timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db      text := current_database();
    v_closing smallint;
    v_due     boolean;
    v_prio    boolean;
    v_paused  boolean;
    v_floor   timestamptz;  -- the claim floor
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
    END IF;{head}{pick}
    END IF;
    IF v_ids IS NULL THEN
        RETURN;  -- nothing to claim
    END IF;
    -- The TID scans delete in physical order: the rows go back in claim order.
    IF num_nonnulls(v_t0, v_t1, v_t2, v_t3) = 1 THEN{delsole}
        END IF;
    ELSE{delmany}
        RETURN QUERY SELECT r.* FROM unnest(v_rows) AS r
            JOIN unnest(v_ids) WITH ORDINALITY AS o(id, ord) ON o.id = r.id ORDER BY o.ord;
    END IF;
END;
$b$, v_c))));

        EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_consume}(p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS {body}$f$,
    jsonb_build_object(
            'fn_consume', v_c ->> 'fn_consume',
            'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_now     timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db      text := current_database();
    v_closing smallint;
    v_due     boolean;
    v_prio    boolean;
    v_paused  boolean;
    v_floor   timestamptz;  -- the claim floor
    v_n       bigint;    -- counter: deliveries consumed
    v_seg     smallint;  -- the claimed message's segment and ctid
    v_tid     tid;
BEGIN{head}{pick1}
    END IF;
    IF v_tid IS NULL THEN
        RETURN;  -- nothing to claim
    END IF;{del1}
    END IF;
END;
$b$, v_c))));

        EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_lease}(amt integer, lease interval,
                                   max_attempts integer DEFAULT NULL,
                                   p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET enable_bitmapscan = off
    SET enable_seqscan = off SET plan_cache_mode = force_generic_plan AS {body}$f$,
    jsonb_build_object(
            'fn_lease', v_c ->> 'fn_lease',
            'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_now     timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db      text := current_database();
    v_closing smallint;
    v_due     boolean;
    v_prio    boolean;
    v_paused  boolean;
    v_floor   timestamptz;  -- the claim floor
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
            MESSAGE = format('lease %s is out of range (> 0, at most 100 years)', lease);
    END IF;
    IF max_attempts IS NOT NULL AND max_attempts < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'max_attempts must be >= 1';
    END IF;{head}{pickl}
    END IF;
    IF v_ids IS NULL THEN
        RETURN;  -- nothing to claim
    END IF;{bury}
    -- The TID scans update in physical order: the rows go back in claim order.
    IF num_nonnulls(v_t0, v_t1, v_t2, v_t3) = 1 THEN{upsole}
        END IF;
    ELSIF num_nonnulls(v_t0, v_t1, v_t2, v_t3) > 1 THEN{upmany}
        RETURN QUERY SELECT r.* FROM unnest(v_rows) AS r
            JOIN unnest(v_ids) WITH ORDINALITY AS o(id, ord) ON o.id = r.id ORDER BY o.ord;
    END IF;
END;
$b$, v_c))));

        EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_take_from}(msgid text, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS {body}$f$,
    jsonb_build_object(
            'fn_take_from', v_c ->> 'fn_take_from',
            'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_id bigint := mbus.iid_id(msgid, {q});
    v_db text := current_database();
BEGIN
    -- A plain DELETE waits for a transaction that holds the row (the seed: take blocks).
    IF v_id IS NOT NULL THEN
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.{tbl} AS q
            WHERE q.c = {cid} AND q.id = v_id AND q.iid IS NULL
              AND (q.expires IS NULL
                   OR q.expires > coalesce(mbus.given_clock(p_now), clock_timestamp()))
            RETURNING {ret_cols}, NULL::uuid AS lease_token, NULL::timestamptz AS lease_until){mark}
        SELECT d.* FROM d;
    ELSE
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.{tbl} AS q
            WHERE q.c = {cid} AND q.iid = msgid
              AND (q.expires IS NULL
                   OR q.expires > coalesce(mbus.given_clock(p_now), clock_timestamp()))
            RETURNING {ret_cols}, NULL::uuid AS lease_token, NULL::timestamptz AS lease_until){mark}
        SELECT d.* FROM d;
    END IF;
END;
$b$, v_c))));
    END LOOP;
END;
$gen$;
