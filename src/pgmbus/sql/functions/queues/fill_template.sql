-- Function: mbus.fill_template(template, names)
--
-- Purpose:  The named substitution of the queue generator: every {name} token of template (a
--           lower-case name in braces) is replaced by names->>name, a piece of SQL that its maker
--           quoted already (quote_ident / quote_literal where the name is defined, in
--           mbus.regenerate_names and the family functions). The template is split at its braces
--           once and the values put between the pieces: a value is never scanned, so a selector
--           holding braces stays as it is. A token without a value is the generator's own
--           mistake: it raises. One statement, no regular expression over the whole text: the
--           generator fills ~140 templates per regeneration.
-- Params:   template  the text with {name} tokens (text)
--           names     the values by name (jsonb object of strings)
-- Returns:  text: the template filled in
-- Locks:    none
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.fill_template(template text, names jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_out     text;
    v_missing text;
BEGIN
    -- Split at every brace: a piece that starts with a name and its closing brace was a token
    -- (its value, then the rest of the piece); any other piece gets its brace back.
    SELECT string_agg(CASE WHEN p.i = 1 THEN p.piece
                           WHEN p.token
                           THEN (names ->> p.name) || substr(p.piece, length(p.name) + 2)
                           ELSE '{' || p.piece END, '' ORDER BY p.i),
           min(p.name) FILTER (WHERE p.token AND names ->> p.name IS NULL)
    INTO v_out, v_missing
    FROM (SELECT x.i, x.piece, x.piece ~ '^[a-z][a-z0-9_]*}' AS token,
                 split_part(x.piece, '}', 1) AS name
          FROM unnest(string_to_array(template, '{')) WITH ORDINALITY AS x (piece, i)) AS p;
    IF v_missing IS NOT NULL THEN
        RAISE EXCEPTION 'template token {%} has no value', v_missing;
    END IF;
    RETURN v_out;
END;
$$;
