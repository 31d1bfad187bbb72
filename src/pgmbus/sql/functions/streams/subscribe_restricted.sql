-- Function: mbus.subscribe_restricted("group", condition, params, expires_after)
--
-- Purpose:  mbus.subscribe for conditions from a less trusted source (an HTTP key of pgmbus
--           serve): the condition must be valid (mbus._check_condition) and inside the restricted
--           grammar (mbus._restricted_condition_error), checked on every call whatever the group
--           already has. The subscription is never full_language, so its condition runs in
--           mbus._match_sandboxed (no table privileges) even if the grammar let something
--           through.
-- Params:   as mbus.subscribe
-- Returns:  bigint: the subscription's id; MB004 (nothing stored) for a condition outside the
--           grammar, naming what is not allowed; the errors of mbus.subscribe
-- Locks:    as mbus.subscribe (and the subscription's row for full_language)
-- Calls:    mbus._check_condition, mbus._restricted_condition_error, mbus.subscribe
-- Tables:   mbus.subscriptions
-- Design:   docs/DESIGN.md#subscription-conditions-checked-restricted-sandboxed
CREATE OR REPLACE FUNCTION mbus.subscribe_restricted("group" text, condition text,
                                                     params jsonb DEFAULT '{}',
                                                     expires_after interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_why text;
    v_id  bigint;
BEGIN
    PERFORM mbus._check_condition(subscribe_restricted.condition);
    v_why := mbus._restricted_condition_error(subscribe_restricted.condition);
    IF v_why IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB004',
            MESSAGE = format('condition %L may not use %s (only the restricted grammar)',
                             subscribe_restricted.condition, v_why),
            HINT = 'operators, comparisons, casts and a fixed list of immutable functions '
                   'over e and s, e.g. s.params @> jsonb_build_object(''topic'', e.topic)';
    END IF;
    v_id := mbus.subscribe(subscribe_restricted."group", subscribe_restricted.condition,
                           subscribe_restricted.params, subscribe_restricted.expires_after);
    -- the service's role may be the owner's: its keys' conditions still run in the sandbox
    UPDATE mbus.subscriptions AS s SET full_language = false
    WHERE s.id = v_id AND s.full_language;
    RETURN v_id;
END;
$$;
