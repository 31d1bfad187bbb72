-- Function: mbus.regenerate_fanout(qname, names)
--
-- Purpose:  The fan-out of qname's posts, for mbus.regenerate_post and mbus.regenerate_batch: one
--           delivery per consumer, guarded by its selector, and one post_<dst> call per trigger,
--           guarded by the trigger's selector (pasted as expressions over t, the message).
--           Returns pieces of SQL by name (fill_template values: vars, sel, sel1, deliver, count,
--           triggers, fanoutn, trign, fire, acked, plain, pcount, pposted, nocons, guard,
--           selective, simple), each listed in DESIGN.md. postn_ refuses an undeliverable post
--           (MB008) first, post_ after its iid check (a retry of a committed post stays a no-op);
--           times are from 1900 to 9998 or 'infinity' (MB006).
-- Params:   qname  the queue's name (text; must exist)
--           names  mbus.regenerate_names(qname)
-- Returns:  jsonb: name -> SQL text
-- Locks:    none
-- Calls:    mbus.fill_template, mbus.generated_name, mbus.generated_names, mbus.selector_failed
-- Tables:   mbus.consumer, mbus.queue_trigger
-- Design:   docs/DESIGN.md#regenerate_fanout-the-pieces-of-a-post
CREATE OR REPLACE FUNCTION mbus.regenerate_fanout(qname text, names jsonb)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $gen$
DECLARE
    v_vars     text := '';
    v_sel      text := '';
    v_sel1     text := '';
    v_deliver  text := '';
    v_count    text := '';
    v_triggers text := '';
    v_fanoutn  text := '';
    v_trign    text := '';
    v_fire     text := '0';
    v_acked    text := '';
    v_plain    integer[] := '{}';
    v_pcount   text := '';
    v_pposted  jsonb := '[]';
    v_ncons    integer := 0;
    v_c        jsonb;  -- names and one consumer's or trigger's own
    r          record;
BEGIN
    FOR r IN SELECT c.cid, c.cname, c.selector FROM mbus.consumer AS c
             WHERE c.qname = regenerate_fanout.qname ORDER BY c.cid LOOP
        v_ncons := v_ncons + 1;
        v_c := names || jsonb_build_object(
            'cid', r.cid::text,
            'cname', quote_literal(r.cname),
            'selector', r.selector,
            'guarded', coalesce('(' || r.selector || ')', 'true'),
            'if', CASE WHEN r.selector IS NULL THEN '' ELSE format('IF v_c%s THEN', r.cid) END,
            'end_if', CASE WHEN r.selector IS NULL THEN '' ELSE 'END IF;' END,
            'cposted', quote_literal('mbus.' || quote_ident(
                           mbus.generated_name('relation', 'posted_c' || r.cid, qname))),
            'cconsumed', quote_literal('mbus.' || quote_ident(
                             mbus.generated_name('relation', 'consumed_c' || r.cid, qname))));
        v_acked := v_acked || mbus.fill_template(' WHEN {cid} THEN nextval({cconsumed})', v_c);
        IF r.selector IS NOT NULL THEN
            v_vars := v_vars || mbus.fill_template(E'\n    v_c{cid} boolean;', v_c);
            v_sel := v_sel
                || mbus.fill_template(E'\n        v_c{cid} := coalesce(({selector}), false);', v_c);
            v_sel1 := v_sel1 || mbus.fill_template($t$
        BEGIN
            v_c{cid} := coalesce(({selector}), false);
        EXCEPTION WHEN OTHERS THEN
            v_c{cid} := false;
            PERFORM mbus.selector_failed({q}, {cname}, NULL, t, SQLSTATE, SQLERRM, v_prio);
        END;$t$, v_c);
        END IF;
        v_deliver := v_deliver || mbus.fill_template($t$
    {if} INSERT INTO mbus.{tbl} (c, vt, id, iid, added, delayed_until, expires, headers, properties, data,
                           consume_after, seg, priority)
        VALUES ({cid}, v_vt, t.id, v_iid, t.added, t.delayed_until,
                t.expires, v_hdr, t.properties, t.data, t.consume_after, v_seg, v_prio);
    {end_if}$t$, v_c);
        IF r.selector IS NULL THEN
            v_plain := v_plain || r.cid;
            v_pposted := v_pposted || to_jsonb(v_c->>'cposted');
            v_pcount := v_pcount || mbus.fill_template(' WHEN {cid} THEN nextval({cposted})', v_c);
        END IF;
        -- counter: deliveries to this consumer (bumped with the others at the end of post_)
        v_count := v_count || E',\n                  ' || CASE WHEN r.selector IS NULL
            THEN mbus.fill_template('nextval({cposted})', v_c)
            ELSE mbus.fill_template('CASE WHEN v_c{cid} THEN nextval({cposted}) END', v_c) END;
        v_fanoutn := v_fanoutn || mbus.fill_template($t$,
    i{cid} AS (
        INSERT INTO mbus.{tbl} (c, vt, id, iid, added, delayed_until, expires, headers, properties,
                             data, seg, priority)
        SELECT {cid}, coalesce(t.delayed_until, t.added), t.id, NULL, t.added, t.delayed_until,
               t.expires, t.stored_headers, t.properties, t.data, v_seg, t.priority
        FROM m AS t WHERE {guarded}
        RETURNING nextval({cposted}))$t$, v_c);
    END LOOP;

    -- Triggers: copy to the destination queue through its own post function.
    FOR r IN SELECT tr.dst, tr.selector, row_number() OVER (ORDER BY tr.dst) AS k,
                    (SELECT g.name FROM mbus.generated_names(tr.dst) AS g
                     WHERE g.kind = 'function' AND g.what = 'post') AS post_fn
             FROM mbus.queue_trigger AS tr
             WHERE tr.src = regenerate_fanout.qname ORDER BY tr.dst LOOP
        v_c := names || jsonb_build_object(
            'k', r.k::text,
            'dst', quote_literal(r.dst),
            'selector', r.selector,
            'guarded', coalesce('(' || r.selector || ')', 'true'),
            'if', CASE WHEN r.selector IS NULL THEN '' ELSE format('IF v_t%s THEN', r.k) END,
            'end_if', CASE WHEN r.selector IS NULL THEN '' ELSE 'END IF;' END,
            'post_fn', quote_ident(r.post_fn),
            'cte', quote_ident('g_' || r.dst));
        IF r.selector IS NOT NULL THEN
            v_vars := v_vars || mbus.fill_template(E'\n    v_t{k} boolean;', v_c);
            v_sel := v_sel
                || mbus.fill_template(E'\n        v_t{k} := coalesce(({selector}), false);', v_c);
            v_sel1 := v_sel1 || mbus.fill_template($t$
        BEGIN
            v_t{k} := coalesce(({selector}), false);
        EXCEPTION WHEN OTHERS THEN
            v_t{k} := false;
            PERFORM mbus.selector_failed({q}, NULL, {dst}, t, SQLSTATE, SQLERRM, v_prio);
        END;$t$, v_c);
        END IF;
        v_triggers := v_triggers || mbus.fill_template($t$
    {if}
        PERFORM mbus.{post_fn}(t.data, t.headers, t.properties, t.delayed_until, t.expires,
                        priority => v_prio);
    {end_if}$t$, v_c);
        v_trign := v_trign || mbus.fill_template($t$,
    {cte} AS (
        SELECT count(mbus.{post_fn}(t.data, t.headers, t.properties, t.delayed_until, t.expires,
                             priority => t.priority)) AS n
        FROM m AS t WHERE {guarded})$t$, v_c);
        v_fire := v_fire || mbus.fill_template(' + (SELECT {cte}.n FROM {cte})', v_c);
    END LOOP;

    RETURN jsonb_build_object(
        'vars', v_vars, 'sel', v_sel, 'sel1', v_sel1, 'deliver', v_deliver, 'count', v_count,
        'triggers', v_triggers, 'fanoutn', v_fanoutn, 'trign', v_trign, 'fire', v_fire,
        'acked', v_acked, 'plain', to_jsonb(v_plain), 'pcount', v_pcount,
        'pposted', v_pposted,
        'selective', (v_sel <> '')::text,
        'simple', (v_sel = '' AND v_triggers = '')::text,
        'nocons', CASE WHEN v_ncons = 0 AND v_triggers = '' THEN mbus.fill_template($t$
    RAISE EXCEPTION USING ERRCODE = 'MB008',
        MESSAGE = {message};$t$, jsonb_build_object(
            'message', quote_literal(format('queue %s has no consumer to deliver to', qname))))
            ELSE '' END,
        'guard', $t$
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
    END IF;$t$);
END;
$gen$;
