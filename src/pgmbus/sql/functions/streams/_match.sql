-- Function: mbus._match(p_group, p_events)
--
-- Purpose:  For each event, the ids of the group's subscriptions it matches. One dynamic query
--           per distinct condition of the group: the events joined with the subscriptions of that
--           condition on the condition itself, so the params of thousands of subscriptions are
--           matched by one join (the GIN index on params serves containment conditions). An event
--           that matches none is left out; an event may appear once per condition it matched
--           (callers merge the arrays).
-- Params:   p_group   the group's name
--           p_events  the events (mbus.stream_row[]; read_subscriptions passes txid NULL)
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[]): ids in ascending order
-- Locks:    none (reads only; the conditions run with the caller's privileges)
-- Callers:  mbus.read_subscriptions, mbus.match_subscriptions
CREATE OR REPLACE FUNCTION mbus._match(p_group text, p_events mbus.stream_row[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cond text;
BEGIN
    FOR v_cond IN
        SELECT DISTINCT s.condition FROM mbus.subscriptions AS s WHERE s.group_name = p_group
    LOOP
        RETURN QUERY EXECUTE format(
            'SELECT e.id, array_agg(s.id ORDER BY s.id) '
            'FROM unnest($1) AS e JOIN mbus.subscriptions AS s '
            '  ON s.group_name = $2 AND s.condition = $3 AND (%s) '
            'GROUP BY e.id', v_cond)
        USING p_events, p_group, v_cond;
    END LOOP;
END;
$$;
