-- Function: mbus.regenerate_peek_take(names)
--
-- Purpose:  Make the functions of qname that find or remove a message by its iid, or every
--           expired one: peek_<q>(msgid), deps_<q>(action, p_iid, p_id) (consume_after's
--           'await', 'release' and 'free' on this queue's deliveries, for mbus.await_deps and
--           mbus.release_deps through mbus.dep_rows), clear_queue_<q>(p_now) and take_<q>(msgid)
--           (the oldest, should two pending share a client iid). A dependency is found by id
--           when its iid has this queue's own form, else by the iid column. Why deps_ is static
--           SQL: docs/DESIGN.md, Decisions (consume_after runs no dynamic SQL).
-- Params:   names  mbus.regenerate_names(q)
-- Returns:  void
-- Locks:    none of its own (CREATE OR REPLACE FUNCTION; see mbus.regenerate_queue)
-- Calls:    mbus.fill_template, mbus.given_clock, mbus.iid_id
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.regenerate_peek_take(names jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $gen$
DECLARE
    -- deps_'s 'await' and 'release' arms, each filled in for both ways of finding the
    -- dependency's deliveries ({cond}: the condition on q)
    v_depwait text := $t$
            SELECT count(*), count(*) FILTER (WHERE NOT x.waited) INTO v_n, v_new
            FROM (SELECT q.waited FROM mbus.{tbl} AS q WHERE {cond} FOR SHARE) AS x;
            IF v_new > 0 THEN
                UPDATE mbus.{tbl} AS q SET waited = true WHERE {cond} AND NOT q.waited;
            END IF;$t$;
    v_by_id   jsonb := jsonb_build_object('cond', 'q.id = p_id AND q.iid IS NULL');
    v_by_iid  jsonb := jsonb_build_object('cond', 'q.iid = p_iid');
    v_deprel  text := $t$
            SELECT count(*), count(*) FILTER (WHERE NOT q.waited) INTO v_n, v_new
            FROM mbus.{tbl} AS q WHERE {cond};
            IF v_new > 0 THEN
                UPDATE mbus.{tbl} AS q SET waited = true WHERE {cond} AND NOT q.waited;
                RETURN (EXISTS (SELECT 1 FROM mbus.{tbl} AS q WHERE {cond}))::integer;
            END IF;$t$;
BEGIN
    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_peek}(msgid text DEFAULT NULL)
RETURNS boolean LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS {body}$f$,
    jsonb_build_object(
        'fn_peek', names ->> 'fn_peek',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_id bigint := mbus.iid_id(msgid, {q});
BEGIN
    IF msgid IS NULL THEN
        RETURN EXISTS (SELECT 1 FROM mbus.{tbl});
    ELSIF v_id IS NOT NULL THEN
        RETURN EXISTS (SELECT 1 FROM mbus.{tbl} AS q WHERE q.id = v_id AND q.iid IS NULL);
    END IF;
    RETURN EXISTS (SELECT 1 FROM mbus.{tbl} AS q WHERE q.iid = msgid);
END;
$b$, names))));

    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_deps}(action text, p_iid text, p_id bigint)
RETURNS bigint LANGUAGE plpgsql VOLATILE AS {body}$f$,
    jsonb_build_object(
        'fn_deps', names ->> 'fn_deps',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_n   bigint;
    v_new bigint;
BEGIN
    CASE action
    WHEN 'await' THEN
        IF p_id IS NOT NULL THEN{await_id}
        ELSE{await_iid}
        END IF;
        RETURN v_n;
    WHEN 'release' THEN
        IF p_id IS NOT NULL THEN{release_id}
        ELSE{release_iid}
        END IF;
        RETURN (v_n > 0)::integer;
    WHEN 'free' THEN
        -- post_<q> puts a waiting message (vt infinity) in the parking segment 0; through the
        -- parent only when none of its deliveries is there (taken, or parked elsewhere by an
        -- older version)
        UPDATE {seg0} AS q SET vt = coalesce(q.delayed_until, q.added)
        WHERE q.id = p_id AND q.vt = 'infinity';
        GET DIAGNOSTICS v_n = ROW_COUNT;
        IF v_n = 0 THEN
            UPDATE mbus.{tbl} AS q SET vt = coalesce(q.delayed_until, q.added)
            WHERE q.id = p_id AND q.vt = 'infinity';
            GET DIAGNOSTICS v_n = ROW_COUNT;
        END IF;
        RETURN v_n;
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown consume_after action %L', action);
    END CASE;
END;
$b$, names || jsonb_build_object(
            'await_id', mbus.fill_template(v_depwait, names || v_by_id),
            'await_iid', mbus.fill_template(v_depwait, names || v_by_iid),
            'release_id', mbus.fill_template(v_deprel, names || v_by_id),
            'release_iid', mbus.fill_template(v_deprel, names || v_by_iid))))));

    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_clear_queue}(p_now timestamptz DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS {body}$f$,
    jsonb_build_object(
        'fn_clear_queue', names ->> 'fn_clear_queue',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_count bigint;
BEGIN
    DELETE FROM mbus.{tbl} AS q
    WHERE q.expires <= coalesce(mbus.given_clock(p_now), clock_timestamp());
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$b$, names))));

    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_take}(msgid text, p_now timestamptz DEFAULT NULL)
RETURNS SETOF mbus.qt_model LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS {body}$f$,
    jsonb_build_object(
        'fn_take', names ->> 'fn_take',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
    v_id  bigint := mbus.iid_id(msgid, {q});
BEGIN
    IF v_id IS NOT NULL THEN
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.{tbl} AS q
            WHERE q.id = v_id AND q.iid IS NULL AND (q.expires IS NULL OR q.expires > v_now)
            RETURNING {ret_cols}){mark}
        SELECT DISTINCT ON (d.id) d.*, NULL::uuid, NULL::timestamptz FROM d ORDER BY d.id;
    ELSE
        RETURN QUERY
        WITH d AS (
            DELETE FROM mbus.{tbl} AS q
            WHERE q.iid = msgid AND (q.expires IS NULL OR q.expires > v_now)
              -- one message: should two pending ones share the iid, the oldest
              AND q.id = (SELECT min(x.id) FROM mbus.{tbl} AS x
                          WHERE x.iid = msgid AND (x.expires IS NULL OR x.expires > v_now))
            RETURNING {ret_cols}){mark}
        SELECT DISTINCT ON (d.id) d.*, NULL::uuid, NULL::timestamptz FROM d ORDER BY d.id;
    END IF;
END;
$b$, names))));
END;
$gen$;
