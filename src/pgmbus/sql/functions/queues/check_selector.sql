-- Function: mbus.check_selector(selector)
--
-- Purpose:  Raise MB004 unless selector is a boolean SQL expression over t (of type mbus.qt_model)
--           built from static values only; a selector is pasted into the generated post functions,
--           so it must be evaluable at post time and exact then. The test is PostgreSQL's own rule
--           for index expressions, applied to the always empty table mbus.t (of mbus.qt_model)
--           inside a subtransaction that is always rolled back: it refuses subqueries, aggregates
--           and anything not IMMUTABLE (now(), current_user, random(), table reads), which is what
--           "static" means here. A session's own table named t does not matter, and no TEMPORARY
--           privilege is needed. It is pasted into generated code, so ';', '--' and '/*' are
--           refused (even inside string literals). NULL passes (no selector); blank is an error.
-- Params:   selector  the expression (text; NULL = none)
-- Returns:  void; raises MB004 with the parser's or planner's message
-- Locks:    SHARE on mbus.t while an index on it is made and rolled back in a subtransaction
--           (concurrent checks do not block each other)
-- Callers:  mbus.create_consumer, mbus.create_trigger
CREATE OR REPLACE FUNCTION mbus.check_selector(selector text)
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
    -- It is pasted into generated code: one expression, nothing that ends or hides code.
    IF strpos(selector, ';') > 0 OR strpos(selector, '--') > 0 OR strpos(selector, '/*') > 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('invalid selector %L: ";", "--" and "/*" are not allowed', selector);
    END IF;
    BEGIN
        EXECUTE format('CREATE INDEX ON mbus.t ((CAST((%s) AS boolean)))', selector);
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
