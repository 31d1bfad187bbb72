-- Function: mbus._check_condition(p_condition)
--
-- Purpose:  _check_condition(condition): raise MB004 unless it is one boolean expression over e and s.
-- Params:   p_condition text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
