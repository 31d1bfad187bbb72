-- Function: mbus.subscribe("group", condition, params, expires_after)
--
-- Purpose:  The id of the group's subscription with this condition and params, created when new
--           and marked active. condition is a boolean SQL expression over e (the event) and s
--           (the subscription), e.g. s.params @> jsonb_build_object('topic', e.topic); the same
--           (group, condition, params) is one shared row, its expires_after the longer (or none).
--           With expires_after, maintain() removes it after that long without
--           touch_subscription(). Checked by mbus._check_condition unless the group has this
--           condition already. Only the owner of mbus.subscriptions gets the full language; any
--           other caller's condition must be in the restricted grammar, and runs sandboxed.
-- Params:   "group"        the group's name
--           condition      the static boolean expression over e and s (text; IMMUTABLE and
--                          STABLE functions only, no subquery: see mbus._check_condition)
--           params         the subscription's parameters (a jsonb object; '{}' unless given)
--           expires_after  the inactivity after which it is removed (interval > 0; NULL = never)
-- Returns:  bigint: the subscription's id; MB002/MB008 for an unknown or expired group, MB004
--           for a bad condition (or one outside the restricted grammar from a caller without
--           the owner's rights), MB005 when params is not an object, MB006 for expires_after <= 0
-- Locks:    the subscription's row (INSERT ... ON CONFLICT DO UPDATE), held to commit; the FK
--           takes FOR KEY SHARE on the group's row
-- Calls:    mbus._check_condition, mbus._group, mbus._restricted_condition_error
-- Tables:   mbus.subscriptions
-- Design:   docs/DESIGN.md#subscription-conditions-checked-restricted-sandboxed
CREATE OR REPLACE FUNCTION mbus.subscribe("group" text, condition text, params jsonb DEFAULT '{}',
                               expires_after interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_id    bigint;
    v_why   text;
    v_owner boolean := pg_has_role((SELECT c.relowner FROM pg_class AS c
                                    WHERE c.oid = 'mbus.subscriptions'::regclass), 'USAGE');
BEGIN
    PERFORM mbus._group("group");
    -- a condition the group has already passed this check (listeners that differ only in
    -- params share it: checking it again would cost a scratch function each time)
    IF NOT EXISTS (SELECT 1 FROM mbus.subscriptions AS s
                   WHERE s.group_name = subscribe."group"
                     AND md5(s.condition) = md5(subscribe.condition)  -- subscriptions_identity
                     AND s.condition = subscribe.condition)
    THEN
        PERFORM mbus._check_condition(subscribe.condition);
    END IF;
    IF NOT v_owner THEN
        v_why := mbus._restricted_condition_error(subscribe.condition);
        IF v_why IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'MB004',
                MESSAGE = format('condition %L may not use %s: only the restricted grammar '
                                 'is allowed to a role without the rights of the owner of '
                                 'mbus.subscriptions', subscribe.condition, v_why),
                HINT = 'operators, comparisons, casts and a fixed list of immutable functions '
                       'over e and s, e.g. s.params @> jsonb_build_object(''topic'', e.topic)';
        END IF;
    END IF;
    IF subscribe.params IS NULL OR jsonb_typeof(subscribe.params) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'params must be a JSON object';
    END IF;
    IF subscribe.expires_after <= interval '0' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('expires_after must be > 0, not %s', subscribe.expires_after);
    END IF;
    INSERT INTO mbus.subscriptions AS s (group_name, condition, params, expires_after,
                                         full_language)
    VALUES (subscribe."group", subscribe.condition, subscribe.params, subscribe.expires_after,
            v_owner)
    ON CONFLICT (group_name, md5(condition), params) DO UPDATE
    SET last_active_at = now(),
        -- shared with a subscriber held to the grammar: the sandbox runs it for both alike
        full_language = s.full_language AND excluded.full_language,
        expires_after = CASE WHEN s.expires_after IS NULL OR excluded.expires_after IS NULL
                             THEN NULL
                             ELSE greatest(s.expires_after, excluded.expires_after) END
    RETURNING s.id INTO v_id;
    RETURN v_id;
END;
$$;
