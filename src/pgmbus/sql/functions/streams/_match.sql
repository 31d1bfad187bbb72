-- Function: mbus._match(p_group, p_events)
--
-- Purpose:  _match(group, events): for each event, the ids of the group's subscriptions it matches.
--           One query per distinct condition of the group; an event that matches none is left out.
-- Params:   p_group text FILL
--           p_events mbus.stream_row[] FILL
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[])
-- Locks:    FILL
-- Callers:  FILL
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
