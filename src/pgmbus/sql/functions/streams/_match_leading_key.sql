-- Function: mbus._match_leading_key(p_condition)
--
-- Purpose:  The equality of a params key and an event field that a condition begins with, when
--           it is a conjunct of the whole condition (`s.params @> jsonb_build_object('k', F)`,
--           `s.params->>'k' = F`, `s.params->'k' = F`, `F = s.params->>'k'`; F one of e.topic,
--           e.key, e.payload->'x', e.payload->>'x'), or NULL. mbus._match_run uses it to pick the
--           candidate subscriptions of a batch outside the sandbox. mbus._match_sandboxed
--           recognises the same shapes with the same expressions: change both together.
-- Params:   p_condition  the condition's text
-- Returns:  text[]: {kind, operator, key, field}: kind 'contains' (operator NULL) or 'equals'
--           (operator '->' or '->>'), the key of params, the event field as written; NULL when
--           the condition does not begin with such a conjunct
-- Locks:    none
-- Calls:    none
-- Tables:   none
-- Design:   docs/DESIGN.md#_match-one-join-per-condition-failures-isolated
CREATE OR REPLACE FUNCTION mbus._match_leading_key(p_condition text)
RETURNS text[]
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_field CONSTANT text := '(e\.topic|e\.key|e\.payload\s*->>?\s*''[A-Za-z0-9_]+''|'
                             '\(\s*e\.payload\s*->>?\s*''[A-Za-z0-9_]+''\s*\))';
    v_param CONSTANT text := '(?:s\.params\s*(->>?)\s*''([A-Za-z0-9_]+)''|'
                             '\(\s*s\.params\s*(->>?)\s*''([A-Za-z0-9_]+)''\s*\))';
    v_tail  CONSTANT text := '\s*(?:$|and\s(.*)$)';
    v_m     text[];
    v_found text[];
    v_rest  text;  -- what follows the equality's AND
BEGIN
    IF p_condition ~* '(\mor\M|--|/\*|[$\\"])' THEN
        RETURN NULL;
    END IF;
    v_m := regexp_match(p_condition,
        '^\s*s\.params\s*@>\s*jsonb_build_object\s*\(\s*''([A-Za-z0-9_]+)''\s*,\s*'
        || v_field || '\s*\)' || v_tail, 'i');
    IF v_m IS NOT NULL THEN
        v_found := ARRAY['contains', NULL, v_m[1], v_m[2]];
        v_rest := v_m[3];
    ELSE
        v_m := regexp_match(p_condition, '^\s*' || v_param || '\s*=\s*' || v_field || v_tail,
                            'i');
        IF v_m IS NOT NULL THEN
            v_found := ARRAY['equals', coalesce(v_m[1], v_m[3]), coalesce(v_m[2], v_m[4]),
                             v_m[5]];
            v_rest := v_m[6];
        ELSE
            v_m := regexp_match(p_condition,
                                '^\s*' || v_field || '\s*=\s*' || v_param || v_tail, 'i');
            IF v_m IS NULL THEN
                RETURN NULL;
            END IF;
            v_found := ARRAY['equals', coalesce(v_m[2], v_m[4]), coalesce(v_m[3], v_m[5]),
                             v_m[1]];
            v_rest := v_m[6];
        END IF;
    END IF;
    -- the rest must close every parenthesis it opens and none it did not open
    v_rest := regexp_replace(coalesce(v_rest, ''), '''[^'']*''', '', 'g');
    WHILE v_rest ~ '\([^()]*\)' LOOP
        v_rest := regexp_replace(v_rest, '\([^()]*\)', '', 'g');
    END LOOP;
    IF v_rest ~ '[()'']' THEN
        RETURN NULL;
    END IF;
    RETURN v_found;
END;
$$;
