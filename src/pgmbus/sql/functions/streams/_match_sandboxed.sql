-- Function: mbus._match_sandboxed(p_condition, p_events, p_subs)
--
-- Purpose:  Run one condition that is not the owner's (mbus.subscriptions.full_language false:
--           an HTTP key's, a SQL role's, a row inserted by hand) over a batch, with no privilege
--           beyond PUBLIC's (SECURITY DEFINER of the role mbus_condition, made by
--           mbus._condition_sandbox; else SECURITY INVOKER). It sees only the events and the
--           subscriptions it is given (arrays, not tables): the condition's own subscriptions of
--           one group. A condition that begins with a key equality runs as a hash join on those
--           keys; the condition still decides every pair.
-- Params:   p_condition  the condition's text
--           p_events     the events (mbus.stream_row[])
--           p_subs       the subscriptions of this condition to match (mbus.subscriptions[])
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[]): per event that matched at
--           least one of p_subs, their ids in ascending order
-- Locks:    none (reads no table)
-- Calls:    none
-- Tables:   mbus.subscriptions
-- Design:   docs/DESIGN.md#subscription-conditions-checked-restricted-sandboxed
CREATE OR REPLACE FUNCTION mbus._match_sandboxed(p_condition text, p_events mbus.stream_row[],
                                                 p_subs mbus.subscriptions[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
-- a merge join sorts both sides by jsonb keys: the hash join is cheaper at any size here
SET enable_mergejoin = off
AS $$
-- @plpgsql_check_options: security_warnings = false
DECLARE
    -- the shapes of a leading equality, kept as written: an event field and a key of params
    v_field CONSTANT text := '(e\.topic|e\.key|e\.payload\s*->>?\s*''[A-Za-z0-9_]+''|'
                             '\(\s*e\.payload\s*->>?\s*''[A-Za-z0-9_]+''\s*\))';
    v_param CONSTANT text := '(?:s\.params\s*(->>?)\s*''([A-Za-z0-9_]+)''|'
                             '\(\s*s\.params\s*(->>?)\s*''([A-Za-z0-9_]+)''\s*\))';
    v_tail  CONSTANT text := '\s*(?:$|and\s(.*)$)';
    v_m     text[];
    v_rest  text;  -- what follows the equality's AND
    v_key   text;  -- the subscription's side of the join, built from the captured key
    v_val   text;  -- the event's side
    v_kind  text;  -- 'contains' or 'equals'
BEGIN
    -- A condition that is an equality of a params key with an event field, alone or followed
    -- by AND and a text that cannot reach above that AND (no OR, no comment, no parenthesis
    -- it does not close, quoted text only in plain quotes), has that equality as a conjunct of
    -- its whole: it can match only pairs whose keys are equal, which a hash join finds
    -- instead of trying every event x subscription. The condition still decides every pair.
    IF p_condition !~* '(\mor\M|--|/\*|[$\\"])' THEN
        -- s.params @> jsonb_build_object('k', F)
        v_m := regexp_match(p_condition,
            '^\s*s\.params\s*@>\s*jsonb_build_object\s*\(\s*''([A-Za-z0-9_]+)''\s*,\s*'
            || v_field || '\s*\)' || v_tail, 'i');
        IF v_m IS NOT NULL THEN
            v_kind := 'contains';
            v_val := format('jsonb_build_object(%L, %s)->%L', v_m[1], v_m[2], v_m[1]);
            v_key := v_m[1];
            v_rest := v_m[3];
        ELSE
            -- s.params->>'k' = F or s.params->'k' = F, either way round
            v_m := regexp_match(p_condition, '^\s*' || v_param || '\s*=\s*' || v_field || v_tail,
                                'i');
            IF v_m IS NOT NULL THEN
                v_key := format('s.params%s%L', coalesce(v_m[1], v_m[3]),
                                coalesce(v_m[2], v_m[4]));
                v_val := v_m[5];
                v_rest := v_m[6];
            ELSE
                v_m := regexp_match(p_condition,
                                    '^\s*' || v_field || '\s*=\s*' || v_param || v_tail, 'i');
                IF v_m IS NOT NULL THEN
                    v_key := format('s.params%s%L', coalesce(v_m[2], v_m[4]),
                                    coalesce(v_m[3], v_m[5]));
                    v_val := v_m[1];
                    v_rest := v_m[6];
                END IF;
            END IF;
            v_kind := CASE WHEN v_key IS NOT NULL THEN 'equals' END;
        END IF;
        -- the rest must close every parenthesis it opens and none it did not open
        v_rest := regexp_replace(coalesce(v_rest, ''), '''[^'']*''', '', 'g');
        WHILE v_rest ~ '\([^()]*\)' LOOP
            v_rest := regexp_replace(v_rest, '\([^()]*\)', '', 'g');
        END LOOP;
        IF v_rest ~ '[()'']' THEN
            v_kind := NULL;
        END IF;
    END IF;
    IF v_kind = 'contains' THEN
        -- for a scalar value V, params @> {k: V} is params->'k' = V (below the top,
        -- containment finds no scalar inside an array); an object or array keeps them all
        RETURN QUERY EXECUTE format(
            'SELECT e.id, array_agg(s.id ORDER BY s.id) '
            'FROM unnest($1) AS e CROSS JOIN LATERAL (SELECT %s AS value) AS pgmbus_e '
            'JOIN (unnest($2) AS s CROSS JOIN LATERAL (VALUES (true, s.params->%L), '
            '      (false, ''null''::jsonb)) AS pgmbus_k (scalar, value)) '
            'ON pgmbus_k.scalar = (jsonb_typeof(pgmbus_e.value) NOT IN (''object'', ''array'')) '
            'AND pgmbus_k.value = (CASE WHEN jsonb_typeof(pgmbus_e.value) NOT IN '
            '(''object'', ''array'') THEN pgmbus_e.value ELSE ''null''::jsonb END) '
            'WHERE (%s) '
            'GROUP BY e.id', v_val, v_key, p_condition)
        USING p_events, p_subs;
    ELSIF v_kind = 'equals' THEN
        RETURN QUERY EXECUTE format(
            'SELECT e.id, array_agg(s.id ORDER BY s.id) '
            'FROM unnest($1) AS e JOIN unnest($2) AS s ON (%s) = (%s) '
            'WHERE (%s) '
            'GROUP BY e.id', v_key, v_val, p_condition)
        USING p_events, p_subs;
    ELSE
        -- the arrays come in as parameters, so the text names no type or table of mbus
        RETURN QUERY EXECUTE format(
            'SELECT e.id, array_agg(s.id ORDER BY s.id) '
            'FROM unnest($1) AS e JOIN unnest($2) AS s ON (%s) '
            'GROUP BY e.id', p_condition)
        USING p_events, p_subs;
    END IF;
END;
$$;
