-- Function: mbus._match_run(p_group, p_condition, p_full, p_events, p_ids)
--
-- Purpose:  One run of one condition of a group over events: the owner's conditions
--           (p_full: mbus.subscriptions.full_language) in mbus._match_query's text with the
--           reader's role, every other one in mbus._match_sandboxed (the role mbus_condition,
--           no table privileges) over the rows of its subscriptions, read here: only the
--           candidates when the condition begins with a key equality
--           (mbus._match_leading_key), picked with the GIN index on params.
--           plpgsql_check: its security warnings are off (the pragma in the body): it runs the
--           owner's conditions as SQL on purpose (checked by mbus._check_condition).
-- Params:   p_group      the group's name
--           p_condition  the condition's text
--           p_full       which of the condition's subscriptions: the owner's (true) or the
--                        others (false)
--           p_events     the events (mbus.stream_row[])
--           p_ids        narrow the subscriptions to these ids (bigint[]; NULL = all)
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[]): as mbus._match_query's text
-- Locks:    none (reads mbus.subscriptions)
-- Calls:    mbus._match_leading_key, mbus._match_query, mbus._match_sandboxed
-- Tables:   mbus.subscriptions
CREATE OR REPLACE FUNCTION mbus._match_run(p_group text, p_condition text, p_full boolean,
                                           p_events mbus.stream_row[], p_ids bigint[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
-- @plpgsql_check_options: security_warnings = false
DECLARE
    v_lead   text[] := mbus._match_leading_key(p_condition);
    v_filter text := 'true';
    v_subs   mbus.subscriptions[];
BEGIN
    IF p_full THEN
        RETURN QUERY EXECUTE mbus._match_query(p_condition)
        USING p_events, p_group, p_condition, p_ids;
        RETURN;
    END IF;
    -- the candidates: subscriptions whose key equals what some event gives it (the GIN index
    -- on params finds the containments); the text is built from the captured key and field
    IF v_lead[1] = 'contains' THEN
        v_filter := format('s.params @> ANY (ARRAY(SELECT DISTINCT jsonb_build_object(%L, %s) '
                           'FROM unnest($1) AS e))', v_lead[3], v_lead[4]);
    ELSIF v_lead[1] = 'equals' THEN
        v_filter := format('(s.params%s%L) = ANY (ARRAY(SELECT DISTINCT %s FROM unnest($1) AS e))',
                           v_lead[2], v_lead[3], v_lead[4]);
    END IF;
    EXECUTE format(
        'SELECT ARRAY(SELECT s FROM mbus.subscriptions AS s '
        'WHERE s.group_name = $2 AND s.condition = $3 AND NOT s.full_language '
        '  AND ($4::bigint[] IS NULL OR s.id = ANY ($4::bigint[])) AND %s '
        'ORDER BY s.id)', v_filter)
    INTO v_subs
    USING p_events, p_group, p_condition, p_ids;
    IF cardinality(v_subs) > 0 THEN
        RETURN QUERY
        SELECT m.event_id, m.subscription_ids
        FROM mbus._match_sandboxed(p_condition, p_events, v_subs) AS m;
    END IF;
END;
$$;
