-- Function: mbus._match_sandboxed(p_condition, p_events, p_subs)
--
-- Purpose:  Run one condition that is not the owner's (mbus.subscriptions.full_language
--           false: an HTTP key's, a SQL role's, a row inserted by hand) over a batch, with no
--           privilege beyond PUBLIC's: mbus._condition_sandbox makes this function SECURITY
--           DEFINER owned by the NOLOGIN role mbus_condition, which has no privilege on any
--           table nor on schema mbus, so even a condition the restricted grammar should have
--           refused cannot read a table (mbus.timer_clients), a superuser-only setting or a
--           file. It sees only the events and the subscriptions it is given (arrays, not
--           tables): the condition's own subscriptions of one group. Without the role (an
--           installer that may not create it) it stays SECURITY INVOKER and runs with the
--           reader's role, still seeing no other subscription.
--           plpgsql_check: its security warnings are off (the pragma in the body): it runs
--           the condition as SQL on purpose (checked by mbus._check_condition when subscribed).
-- Params:   p_condition  the condition's text
--           p_events     the events (mbus.stream_row[])
--           p_subs       the subscriptions of this condition to match (mbus.subscriptions[])
-- Returns:  TABLE (event_id bigint, subscription_ids bigint[]): per event that matched at
--           least one of p_subs, their ids in ascending order
-- Locks:    none (reads no table)
-- Calls:    none
-- Tables:   mbus.subscriptions
CREATE OR REPLACE FUNCTION mbus._match_sandboxed(p_condition text, p_events mbus.stream_row[],
                                                 p_subs mbus.subscriptions[])
RETURNS TABLE (event_id bigint, subscription_ids bigint[])
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- @plpgsql_check_options: security_warnings = false
BEGIN
    -- the arrays come in as parameters, so the text names no type or table of mbus
    RETURN QUERY EXECUTE format(
        'SELECT e.id, array_agg(s.id ORDER BY s.id) '
        'FROM unnest($1) AS e JOIN unnest($2) AS s ON (%s) '
        'GROUP BY e.id', p_condition)
    USING p_events, p_subs;
END;
$$;
