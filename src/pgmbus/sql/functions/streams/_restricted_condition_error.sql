-- Function: mbus._restricted_condition_error(p_condition)
--
-- Purpose:  Why a valid subscription condition (mbus._check_condition passed) is outside the
--           restricted grammar, or NULL when it is inside. The restricted grammar is what a
--           condition submitted over HTTP may use and what any reader may run on anyone's
--           behalf: it sees only the event (e) and the subscription (s), never a table, a setting
--           or the session. Decided by an allow-list of node kinds, functions, operators and
--           types over PostgreSQL's own parse tree of the condition.
-- Params:   p_condition  a condition that mbus._check_condition accepts
-- Returns:  text: NULL inside the grammar, else what is not allowed (for an MB004 message)
-- Locks:    none others see: a temporary function made and rolled back in a subtransaction
-- Calls:    mbus._restricted_operator, mbus._restricted_types
-- Tables:   mbus.subscriptions
-- Design:   docs/DESIGN.md#subscription-conditions-checked-restricted-sandboxed
CREATE OR REPLACE FUNCTION mbus._restricted_condition_error(p_condition text)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
-- @plpgsql_check_options: security_warnings = false
DECLARE
    v_fn    text := 'mbus_condition_' || md5(random()::text || clock_timestamp()::text);
    v_body  text;
    v_why   text;
    v_state text;
    v_msg   text;
    v_types oid[] := mbus._restricted_types();
BEGIN
    BEGIN
        EXECUTE format('CREATE FUNCTION pg_temp.%I(e mbus.stream_row, s mbus.subscriptions) '
                       'RETURNS boolean LANGUAGE sql STABLE RETURN (%s)', v_fn, p_condition);
        SELECT p.prosqlbody::text INTO STRICT v_body
        FROM pg_proc AS p
        WHERE p.proname = v_fn AND p.pronamespace = pg_my_temp_schema();
        RAISE EXCEPTION USING ERRCODE = 'MBOK0';  -- roll the scratch function back
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
        IF v_state <> 'MBOK0' THEN
            RETURN replace(v_msg, v_fn, 'condition');
        END IF;
    END;
    -- one query (the body itself): a second one is a subquery
    IF (SELECT count(*) FROM regexp_matches(v_body, '\{QUERY ', 'g')) <> 1 THEN
        RETURN 'a subquery';
    END IF;
    SELECT string_agg(DISTINCT lower(m[1]), ', ') INTO v_why
    FROM regexp_matches(v_body, '\{([A-Z_]+)', 'g') AS m
    WHERE m[1] <> ALL (ARRAY['QUERY', 'FROMEXPR', 'TARGETENTRY', 'BOOLEXPR', 'OPEXPR',
                             'DISTINCTEXPR', 'NULLIFEXPR', 'SCALARARRAYOPEXPR', 'FUNCEXPR',
                             'CONST', 'PARAM', 'FIELDSELECT', 'COERCEVIAIO', 'RELABELTYPE',
                             'ARRAYCOERCEEXPR', 'COALESCEEXPR', 'CASEEXPR', 'CASEWHEN',
                             'CASETESTEXPR', 'NULLTEST', 'BOOLEANTEST', 'SUBSCRIPTINGREF',
                             'ARRAYEXPR', 'MINMAXEXPR', 'COLLATEEXPR']);
    IF v_why IS NOT NULL THEN
        RETURN format('the expression kind(s) %s', v_why);
    END IF;
    -- the operators of the functions the body calls (asked one by one: few rows)
    WITH called AS MATERIALIZED (
        SELECT DISTINCT m[1]::oid AS fn
        FROM regexp_matches(v_body, ':(?:funcid|opfuncid|hashfuncid|negfuncid) ([0-9]+)',
                            'g') AS m
    ), their_operators AS MATERIALIZED (
        SELECT o.oid, o.oprcode::oid AS fn
        FROM pg_operator AS o
        WHERE o.oprcode::oid IN (SELECT c.fn FROM called AS c)
    ), allowed_codes AS MATERIALIZED (
        -- after the CTE above, so the check runs on these few operators, not on all of them
        SELECT t.fn FROM their_operators AS t WHERE mbus._restricted_operator(t.oid)
    )
    SELECT string_agg(DISTINCT f.oid::regprocedure::text, ', ') INTO v_why
    FROM called AS c
    JOIN pg_proc AS f ON f.oid = c.fn
    WHERE NOT (f.pronamespace = 'pg_catalog'::regnamespace
               AND (f.proname IN ('jsonb_build_object', 'jsonb_build_array')
                    OR (f.provolatile = 'i'
                        AND (f.proname IN (
                            'abs', 'array_length', 'array_position', 'btrim', 'cardinality',
                            'ceil', 'ceiling', 'char_length', 'character_length', 'floor',
                            'jsonb_array_length', 'jsonb_exists', 'jsonb_exists_all',
                            'jsonb_exists_any', 'jsonb_extract_path', 'jsonb_extract_path_text',
                            'jsonb_strip_nulls', 'jsonb_typeof', 'left', 'length', 'lower',
                            'ltrim', 'md5', 'mod', 'octet_length', 'regexp_like', 'replace',
                            'right', 'round', 'rtrim', 'sign', 'split_part', 'starts_with',
                            'strpos', 'substr', 'substring', 'trunc', 'upper',
                            'bool', 'int2', 'int4', 'int8', 'numeric', 'float4', 'float8',
                            'text', 'varchar', 'jsonb', 'uuid')
                             OR f.oid IN (SELECT a.fn FROM allowed_codes AS a)))));
    IF v_why IS NOT NULL THEN
        RETURN format('the function(s) %s', v_why);
    END IF;
    SELECT string_agg(DISTINCT m[1]::oid::regoperator::text, ', ') INTO v_why
    FROM regexp_matches(v_body, ':opno ([0-9]+)', 'g') AS m
    WHERE NOT mbus._restricted_operator(m[1]::oid);
    IF v_why IS NOT NULL THEN
        RETURN format('the operator(s) %s', v_why);
    END IF;
    SELECT string_agg(DISTINCT format_type(m[1]::oid, NULL), ', ') INTO v_why
    FROM regexp_matches(v_body, ':(?:consttype|paramtype|resulttype|funcresulttype|'
                                'opresulttype|array_typeid|element_typeid|refcontainertype|'
                                'refelemtype|refrestype|coalescetype|casetype|minmaxtype) '
                                '([0-9]+)', 'g') AS m
    WHERE m[1]::oid <> 0 AND m[1]::oid <> ALL (v_types);
    IF v_why IS NOT NULL THEN
        RETURN format('the type(s) %s', v_why);
    END IF;
    RETURN NULL;
END;
$$;
