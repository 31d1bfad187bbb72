-- Function: mbus._match(p_group, p_events)
--
-- Purpose:  For each event, the ids of the group's subscriptions it matches. One dynamic query
--           per distinct condition of the group, the text of mbus._match_query: the events
--           joined with the subscriptions of that condition on the condition itself, so the
--           params of thousands of subscriptions are matched by one join (the GIN index on
--           params serves containment conditions). An event that matches none is left out; an
--           event may appear once per condition it matched (callers merge the arrays).
--           One condition cannot harm another: each runs in its own subtransaction. A condition
--           that raises an error (a cast of a payload field, a division by zero) is run again
--           event by event, so its subscriptions still get the events it can decide; the
--           events it fails on are not matched for them, a WARNING names the group, the
--           subscriptions, the events and the error, and the transaction-local setting
--           mbus.match_failed is raised by the number of those subscriptions (read_subscriptions
--           counts it). Other conditions, subscriptions and groups go on. Rows the failed run
--           returned before its error are complete (an event's row is emitted only once all of
--           its join rows are aggregated) and the rerun returns them again: callers merge.
-- Params:   p_group   the group's name
--           p_events  the events (mbus.stream_row[]; read_subscriptions passes txid NULL)
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[]): ids in ascending order
-- Locks:    none (reads only; the conditions run with the caller's privileges); sets
--           mbus.match_failed (set_config, local to the transaction) when a condition failed
-- Callers:  mbus.read_subscriptions, mbus.match_subscriptions
CREATE OR REPLACE FUNCTION mbus._match(p_group text, p_events mbus.stream_row[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_cond   text;
    v_query  text;
    v_ev     mbus.stream_row;
    v_failed bigint[];
    v_subs   bigint[];
    v_err    text;
BEGIN
    FOR v_cond IN
        SELECT DISTINCT s.condition FROM mbus.subscriptions AS s WHERE s.group_name = p_group
    LOOP
        v_query := mbus._match_query(v_cond);
        BEGIN
            RETURN QUERY EXECUTE v_query USING p_events, p_group, v_cond;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_err = MESSAGE_TEXT;
            v_failed := '{}';
            FOREACH v_ev IN ARRAY p_events LOOP
                BEGIN
                    RETURN QUERY EXECUTE v_query USING ARRAY[v_ev], p_group, v_cond;
                EXCEPTION WHEN OTHERS THEN
                    v_failed := v_failed || v_ev.id;
                END;
            END LOOP;
            IF cardinality(v_failed) > 0 THEN
                v_subs := ARRAY(SELECT s.id FROM mbus.subscriptions AS s
                                WHERE s.group_name = p_group AND s.condition = v_cond
                                ORDER BY s.id);
                PERFORM set_config('mbus.match_failed',
                                   (coalesce(nullif(current_setting('mbus.match_failed', true),
                                                    ''), '0')::bigint
                                    + cardinality(v_subs))::text, true);
                RAISE WARNING USING MESSAGE = format(
                    'pgmbus: subscriptions %s of group %L: their condition failed on events %s '
                    'and was skipped for them: %s', v_subs, p_group, v_failed, v_err);
            END IF;
        END;
    END LOOP;
END;
$$;
