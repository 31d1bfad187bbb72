-- Function: mbus._check_condition(p_condition)
--
-- Purpose:  Raise MB004 unless the text is a valid subscription condition: one boolean SQL
--           expression (no implicit cast) over e (the event: mbus.stream_row) and s (the
--           subscription: mbus.subscriptions) that is static: no subqueries, aggregates, window or
--           set-returning functions, nor VOLATILE functions; IMMUTABLE and STABLE ones only. Not
--           empty, at most 8 kB, no ';', comments or positional parameters; it must run in
--           mbus._match_query's text. Nothing is left behind (a subtransaction always rolled
--           back). Conditions may still fail on some events at read time: mbus._match isolates
--           those.
-- Params:   p_condition  the condition (text)
-- Returns:  void; MB004 (with an example in the hint) when it is not a valid condition
-- Locks:    none others see: a temporary function made and rolled back in a subtransaction
--           (needs the TEMPORARY privilege on the database); ACCESS SHARE on
--           mbus.subscriptions for the test query
-- Calls:    mbus._match_query
-- Tables:   mbus.subscriptions
-- Design:   docs/DESIGN.md#_check_condition-static-is-what-the-planner-inlines
CREATE OR REPLACE FUNCTION mbus._check_condition(p_condition text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
-- @plpgsql_check_options: security_warnings = false
DECLARE
    v_fn    text := 'mbus_condition_' || md5(random()::text || clock_timestamp()::text);
    v_line  text;
    v_state text;
    v_msg   text;
BEGIN
    IF p_condition IS NULL OR btrim(p_condition) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004', MESSAGE = 'condition must not be empty';
    END IF;
    IF octet_length(p_condition) > 8192 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('condition of %s bytes is too long (at most 8192)',
                             octet_length(p_condition));
    END IF;
    IF p_condition ~ '(;|--|/\*|\$[0-9])' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('condition %L may not contain ";", comments or $n parameters',
                             p_condition);
    END IF;
    BEGIN
        EXECUTE format('CREATE FUNCTION pg_temp.%I(e mbus.stream_row, s mbus.subscriptions) '
                       'RETURNS boolean LANGUAGE sql STABLE RETURN (%s)', v_fn, p_condition);
        FOR v_line IN
            EXECUTE format('EXPLAIN (VERBOSE, COSTS OFF) SELECT pg_temp.%I(NULL, NULL)', v_fn)
        LOOP
            IF strpos(v_line, v_fn) > 0 THEN
                RAISE EXCEPTION USING ERRCODE = 'MB004',
                    MESSAGE = 'it is not static: it has a subquery, an aggregate, a window or '
                              'set-returning function, or a VOLATILE function (only IMMUTABLE '
                              'and STABLE functions may be called)';
            END IF;
        END LOOP;
        EXECUTE mbus._match_query(p_condition)
        USING '{}'::mbus.stream_row[], ''::text, p_condition, NULL::bigint[];
        RAISE EXCEPTION USING ERRCODE = 'MBOK0';  -- roll the scratch function back
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
        IF v_state <> 'MBOK0' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB004',
                MESSAGE = format('invalid condition %L: %s', p_condition,
                                 replace(v_msg, v_fn, 'condition')),
                HINT = 'a static boolean SQL expression over e (the event) and s (the '
                       'subscription), for example: '
                       's.params @> jsonb_build_object(''topic'', e.topic)';
        END IF;
    END;
END;
$$;
