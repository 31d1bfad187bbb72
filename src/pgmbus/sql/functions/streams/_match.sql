-- Function: mbus._match(p_group, p_events)
--
-- Purpose:  For each event, the ids of the group's subscriptions it matches: one run
--           (mbus._match_run) per distinct condition of the group and kind, the events joined
--           with that condition's subscriptions on the condition itself. An event that matches
--           none is left out; an event may appear once per condition it matched, and a rerun may
--           return rows again (callers merge the arrays). A condition or subscription that fails
--           is not matched for the events it fails on, a WARNING names them, and the
--           transaction-local setting mbus.match_failed counts the failing subscriptions;
--           everything else goes on.
-- Params:   p_group   the group's name
--           p_events  the events (mbus.stream_row[]; read_subscriptions passes txid NULL)
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[]): ids in ascending order; 42501
--           when the group has conditions for the sandbox and the caller may not execute
--           mbus._match_sandboxed
-- Locks:    none (reads only; the owner's conditions run with the caller's privileges); sets
--           mbus.match_failed (set_config, local to the transaction) when a condition failed
-- Calls:    mbus._match_run, mbus._match_sandboxed
-- Tables:   mbus.subscriptions
-- Design:   docs/DESIGN.md#_match-one-join-per-condition-failures-isolated
CREATE OR REPLACE FUNCTION mbus._match(p_group text, p_events mbus.stream_row[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
-- @plpgsql_check_options: security_warnings = false
DECLARE
    v_cond   text;
    v_full   boolean;  -- the owner's subscriptions of the condition, or the others
    v_subs   bigint[];   -- the condition's subscriptions, ascending
    v_todo   int[];      -- ranges of v_subs still to run: pairs (first, last) of indexes
    v_lo     int;
    v_hi     int;
    v_mid    int;
    v_ev     mbus.stream_row;
    v_evs    bigint[];   -- events a failing subscription could not decide
    v_bad    bigint[];   -- failing subscriptions
    v_failed bigint[];   -- events any of them failed on
    v_err    text;
BEGIN
    -- a reader that may not run the sandbox would see every such condition fail, each one
    -- skipped with a WARNING: say what is missing instead
    IF EXISTS (SELECT 1 FROM mbus.subscriptions AS s
               WHERE s.group_name = p_group AND NOT s.full_language)
       AND NOT has_function_privilege(
           'mbus._match_sandboxed(text, mbus.stream_row[], mbus.subscriptions[])', 'EXECUTE')
    THEN
        RAISE EXCEPTION USING ERRCODE = '42501',
            MESSAGE = format('role %s may not match the conditions of group %L: it lacks '
                             'EXECUTE on mbus._match_sandboxed', current_user, p_group),
            HINT = 'GRANT EXECUTE ON FUNCTION mbus._match_sandboxed(text, mbus.stream_row[], '
                   'mbus.subscriptions[]) TO the roles that read groups with subscriptions';
    END IF;
    FOR v_cond, v_full IN
        SELECT DISTINCT s.condition, s.full_language FROM mbus.subscriptions AS s
        WHERE s.group_name = p_group
    LOOP
        BEGIN
            RETURN QUERY SELECT * FROM mbus._match_run(p_group, v_cond, v_full, p_events, NULL);
            CONTINUE;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_err = MESSAGE_TEXT;
        END;
        v_subs := ARRAY(SELECT s.id FROM mbus.subscriptions AS s
                        WHERE s.group_name = p_group AND s.condition = v_cond
                          AND s.full_language = v_full ORDER BY s.id);
        v_todo := CASE WHEN cardinality(v_subs) > 1
                       THEN ARRAY[1, cardinality(v_subs) / 2,
                                  cardinality(v_subs) / 2 + 1, cardinality(v_subs)]
                       ELSE ARRAY[1, cardinality(v_subs)] END;
        v_bad := '{}';
        v_failed := '{}';
        WHILE cardinality(v_todo) > 0 LOOP
            v_lo := v_todo[1];
            v_hi := v_todo[2];
            v_todo := v_todo[3:];
            CONTINUE WHEN v_lo > v_hi;
            BEGIN
                RETURN QUERY SELECT * FROM mbus._match_run(p_group, v_cond, v_full, p_events,
                                                           v_subs[v_lo:v_hi]);
                CONTINUE;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS v_err = MESSAGE_TEXT;
            END;
            IF v_lo < v_hi THEN
                v_mid := (v_lo + v_hi) / 2;
                v_todo := ARRAY[v_lo, v_mid, v_mid + 1, v_hi] || v_todo;
                CONTINUE;
            END IF;
            -- one subscription that fails on this batch: event by event
            v_evs := '{}';
            FOREACH v_ev IN ARRAY p_events LOOP
                BEGIN
                    RETURN QUERY SELECT * FROM mbus._match_run(p_group, v_cond, v_full,
                                                               ARRAY[v_ev], ARRAY[v_subs[v_lo]]);
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_err = MESSAGE_TEXT;
                    v_evs := v_evs || v_ev.id;
                END;
            END LOOP;
            IF cardinality(v_evs) > 0 THEN
                v_bad := v_bad || v_subs[v_lo];
                v_failed := ARRAY(SELECT DISTINCT x FROM unnest(v_failed || v_evs) AS x
                                  ORDER BY x);
            END IF;
        END LOOP;
        IF cardinality(v_bad) > 0 THEN
            PERFORM set_config('mbus.match_failed',
                               (coalesce(nullif(current_setting('mbus.match_failed', true),
                                                ''), '0')::bigint
                                + cardinality(v_bad))::text, true);
            RAISE WARNING USING MESSAGE = format(
                'pgmbus: subscriptions %s of group %L: their condition failed on events %s '
                'and was skipped for them: %s', v_bad, p_group, v_failed, v_err);
        END IF;
    END LOOP;
END;
$$;
