-- Function: mbus.check_selector(selector)
--
-- Purpose:  Raise MB004 unless selector is a boolean SQL expression over t (of type
--           mbus.qt_model) built from static values only (no subquery, aggregate or anything not
--           IMMUTABLE), every column named through t (`id > 0` is refused, `t.id > 0` passes),
--           without ';', '--' or '/*' (even inside string literals), and calling only functions
--           that are built in or SECURITY DEFINER and executable by the caller. NULL passes (no
--           selector); blank is an error. Nothing is left behind: the checks run in a
--           subtransaction that is always rolled back.
-- Params:   selector  the expression (text; NULL = none)
-- Returns:  void; raises MB004 with the parser's or planner's message
-- Locks:    SHARE on mbus.t while an index on it is made and rolled back in a subtransaction
--           (concurrent checks do not block each other); the scratch function's catalog rows
-- Calls:    none
-- Tables:   mbus.t
-- Design:   docs/DESIGN.md#check_selector-postgresqls-own-rules-applied-to-a-scratch-table
CREATE OR REPLACE FUNCTION mbus.check_selector(selector text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
-- @plpgsql_check_options: security_warnings = false
DECLARE
    v_state text;
    v_msg   text;
    v_fn    text := 'mbus_selector_' || md5(random()::text || clock_timestamp()::text);
    v_why   text;
BEGIN
    IF selector IS NULL THEN
        RETURN;
    END IF;
    IF btrim(selector) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004', MESSAGE = 'selector must not be empty';
    END IF;
    -- It is pasted into generated code: one expression, nothing that ends or hides code.
    IF strpos(selector, ';') > 0 OR strpos(selector, '--') > 0 OR strpos(selector, '/*') > 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('invalid selector %L: ";", "--" and "/*" are not allowed', selector);
    END IF;
    BEGIN
        EXECUTE format('CREATE INDEX ON mbus.t ((CAST((%s) AS boolean)))', selector);
        -- The generated code runs it where only the record t and its own parameters are in
        -- scope: an unqualified column (id) would fail on every post, or (iid, headers) mean a
        -- parameter. So its names must resolve where only t is: a scratch SQL function of t.
        EXECUTE format('CREATE FUNCTION mbus.%I(t mbus.qt_model) RETURNS boolean '
                       'LANGUAGE sql IMMUTABLE RETURN (CAST((%s) AS boolean))', v_fn, selector);
        SELECT string_agg(DISTINCT f.oid::regprocedure::text, ', ') INTO v_why
        FROM pg_depend AS d
        LEFT JOIN pg_operator AS o
               ON d.refclassid = 'pg_operator'::regclass AND o.oid = d.refobjid
        JOIN pg_proc AS f
          ON f.oid = CASE WHEN d.refclassid = 'pg_proc'::regclass THEN d.refobjid
                          ELSE o.oprcode::oid END
        WHERE d.classid = 'pg_proc'::regclass
          AND d.objid = format('mbus.%I(mbus.qt_model)', v_fn)::regprocedure
          AND d.refclassid IN ('pg_proc'::regclass, 'pg_operator'::regclass)
          AND f.pronamespace <> 'pg_catalog'::regnamespace
          AND NOT (f.prosecdef AND has_function_privilege(f.oid, 'EXECUTE'));
        IF v_why IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'MB004',
                MESSAGE = format('it calls %s, which would run with the rights of whoever '
                                 'posts: only built-in functions and SECURITY DEFINER functions '
                                 'you may execute are allowed', v_why);
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'MBOK0';  -- roll the scratch objects back
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
        IF v_state <> 'MBOK0' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB004',
                MESSAGE = format('invalid selector %L: %s', selector,
                                 replace(v_msg, v_fn, 'selector')),
                HINT = 'a selector is a boolean expression over t (mbus.qt_model) using only '
                       'static values and immutable functions, e.g. (t.properties->>''k'') = ''v''';
        END IF;
    END;
END;
$$;
