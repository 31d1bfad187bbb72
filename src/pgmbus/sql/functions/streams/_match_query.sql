-- Function: mbus._match_query(p_condition)
--
-- Purpose:  The one text in which the owner's subscription conditions run: the events ($1)
--           joined with the full-language subscriptions of one condition of one group ($2, $3;
--           $4 narrows them to these ids, NULL for all) ON the condition (the others run in
--           mbus._match_sandboxed). The subscriptions are picked in a subquery, so whatever the condition says it can only
--           choose among its own subscriptions (an OR at its top level, e.g. the text
--           `e.topic = 'x') OR (true`, cannot reach other conditions or groups). mbus._match
--           runs it and mbus._check_condition validates a condition by running it, so what is
--           checked is exactly what runs.
-- Params:   p_condition  the condition's text, pasted as is (checked by mbus._check_condition)
-- Returns:  text: a query with parameters $1 mbus.stream_row[], $2 the group (text), $3 the
--           condition (text), $4 subscription ids (bigint[], NULL: all of them), returning (event id bigint, subscription ids bigint[] ascending)
--           per event that matched at least one subscription
-- Locks:    none (builds text)
-- Calls:    none
-- Tables:   mbus.subscriptions
CREATE OR REPLACE FUNCTION mbus._match_query(p_condition text)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT format(
        'SELECT e.id, array_agg(s.id ORDER BY s.id) '
        'FROM unnest($1::mbus.stream_row[]) AS e '
        'JOIN (SELECT * FROM mbus.subscriptions AS sub '
        '      WHERE sub.group_name = $2::text AND sub.condition = $3::text '
        '        AND sub.full_language '
        '        AND ($4::bigint[] IS NULL OR sub.id = ANY ($4::bigint[]))) AS s '
        'ON (%s) '
        'GROUP BY e.id', p_condition);
$$;
