-- Function: mbus._match_run(p_group, p_condition, p_full, p_events, p_ids)
--
-- Purpose:  One run of one condition of a group over events: the owner's conditions (p_full:
--           mbus.subscriptions.full_language) in mbus._match_query's text with the reader's role,
--           every other one in mbus._match_sandboxed over the rows of its subscriptions, read
--           here: only the candidates when the condition begins with a key equality
--           (mbus._match_leading_key), picked by static statements (the condition's text does not
--           run here).
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
-- Design:   docs/DESIGN.md#_match-one-join-per-condition-failures-isolated
CREATE OR REPLACE FUNCTION mbus._match_run(p_group text, p_condition text, p_full boolean,
                                           p_events mbus.stream_row[], p_ids bigint[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
-- @plpgsql_check_options: security_warnings = false
DECLARE
    v_lead  text[];
    v_field text[];  -- the event field of the leading equality: {column, operator, name}
    v_probe jsonb[];
    v_texts text[];
    v_subs  mbus.subscriptions[];
BEGIN
    IF p_full THEN
        RETURN QUERY EXECUTE mbus._match_query(p_condition)
        USING p_events, p_group, p_condition, p_ids;
        RETURN;
    END IF;
    v_lead := mbus._match_leading_key(p_condition);
    v_field := regexp_match(v_lead[4],
                            '^\(?\s*e\.(topic|key|payload)(?:\s*(->>?)\s*''([A-Za-z0-9_]+)'')?',
                            'i');
    v_field[1] := lower(v_field[1]);
    -- The candidates: the subscriptions whose key equals what some event of the batch gives
    -- it (the GIN index on params finds the containments). Static statements over the
    -- field's value: nothing of the condition's text runs here.
    IF v_lead[1] = 'contains' THEN
        v_probe := ARRAY(
            SELECT DISTINCT jsonb_build_object(v_lead[3], CASE
                WHEN v_field[1] = 'topic' THEN to_jsonb(e.topic)
                WHEN v_field[1] = 'key' THEN to_jsonb(e.key)
                WHEN v_field[2] = '->' THEN e.payload -> v_field[3]
                ELSE to_jsonb(e.payload ->> v_field[3]) END)
            FROM unnest(p_events) AS e);
        v_subs := ARRAY(
            SELECT s FROM mbus.subscriptions AS s
            WHERE s.group_name = p_group AND s.condition = p_condition AND NOT s.full_language
              AND (p_ids IS NULL OR s.id = ANY (p_ids)) AND s.params @> ANY (v_probe)
            ORDER BY s.id);
    ELSIF v_lead[1] = 'equals' AND v_lead[2] = '->' AND v_field[2] = '->' THEN
        v_probe := ARRAY(SELECT DISTINCT e.payload -> v_field[3] FROM unnest(p_events) AS e);
        v_subs := ARRAY(
            SELECT s FROM mbus.subscriptions AS s
            WHERE s.group_name = p_group AND s.condition = p_condition AND NOT s.full_language
              AND (p_ids IS NULL OR s.id = ANY (p_ids)) AND (s.params -> v_lead[3]) = ANY (v_probe)
            ORDER BY s.id);
    ELSIF v_lead[1] = 'equals' AND v_lead[2] = '->>' AND v_field[2] IS DISTINCT FROM '->' THEN
        v_texts := ARRAY(
            SELECT DISTINCT CASE WHEN v_field[1] = 'topic' THEN e.topic
                                 WHEN v_field[1] = 'key' THEN e.key
                                 ELSE e.payload ->> v_field[3] END
            FROM unnest(p_events) AS e);
        v_subs := ARRAY(
            SELECT s FROM mbus.subscriptions AS s
            WHERE s.group_name = p_group AND s.condition = p_condition AND NOT s.full_language
              AND (p_ids IS NULL OR s.id = ANY (p_ids))
              AND (s.params ->> v_lead[3]) = ANY (v_texts)
            ORDER BY s.id);
    ELSE
        v_subs := ARRAY(
            SELECT s FROM mbus.subscriptions AS s
            WHERE s.group_name = p_group AND s.condition = p_condition AND NOT s.full_language
              AND (p_ids IS NULL OR s.id = ANY (p_ids))
            ORDER BY s.id);
    END IF;
    IF cardinality(v_subs) > 0 THEN
        RETURN QUERY
        SELECT m.event_id, m.subscription_ids
        FROM mbus._match_sandboxed(p_condition, p_events, v_subs) AS m;
    END IF;
END;
$$;
