-- Function: mbus._check_condition(p_condition)
--
-- Purpose:  Raise MB004 unless the text is one boolean SQL expression over e (the event:
--           mbus.events) and s (the subscription: mbus.subscriptions): not empty, no ';' and no
--           comments, and it plans as `SELECT (condition)::boolean FROM mbus.events AS e,
--           mbus.subscriptions AS s WHERE false` (run, it reads no row). The expression is later
--           pasted into mbus._match's query and runs with the reader's privileges.
-- Params:   p_condition  the condition (text)
-- Returns:  void; MB004 (with an example in the hint) when it is not a valid condition
-- Locks:    ACCESS SHARE on mbus.events and mbus.subscriptions for the test query
-- Callers:  mbus.subscribe
CREATE OR REPLACE FUNCTION mbus._check_condition(p_condition text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    IF p_condition IS NULL OR btrim(p_condition) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004', MESSAGE = 'condition must not be empty';
    END IF;
    IF p_condition ~ '(;|--|/\*)' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('condition %L may not contain ";" or comments', p_condition);
    END IF;
    BEGIN
        EXECUTE format('SELECT (%s)::boolean FROM mbus.events AS e, mbus.subscriptions AS s '
                       'WHERE false', p_condition);
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('invalid condition %L: %s', p_condition, SQLERRM),
            HINT = 'a boolean SQL expression over e (the event) and s (the subscription), '
                   'for example: s.params @> jsonb_build_object(''topic'', e.topic)';
    END;
END;
$$;
