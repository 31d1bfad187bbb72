-- Function: mbus.subscribe("group", condition, params, expires_after)
--
-- Purpose:  subscribe(group, condition, params, expires_after): the id of the group's subscription with
--           this condition and params, created when new (and marked active either way). With
--           expires_after, maintain() removes it after that long without touch_subscription().
-- Params:   "group" text FILL
--           condition text FILL
--           params jsonb DEFAULT '{}' FILL
--           expires_after interval DEFAULT NULL FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.subscribe("group" text, condition text, params jsonb DEFAULT '{}',
                               expires_after interval DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
DECLARE
    v_id bigint;
BEGIN
    PERFORM mbus._group("group");
    PERFORM mbus._check_condition(subscribe.condition);
    IF subscribe.params IS NULL OR jsonb_typeof(subscribe.params) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'params must be a JSON object';
    END IF;
    INSERT INTO mbus.subscriptions AS s (group_name, condition, params, expires_after)
    VALUES (subscribe."group", subscribe.condition, subscribe.params, subscribe.expires_after)
    ON CONFLICT (group_name, md5(condition), params) DO UPDATE
    SET last_active_at = now(),
        expires_after = CASE WHEN s.expires_after IS NULL OR excluded.expires_after IS NULL
                             THEN NULL
                             ELSE greatest(s.expires_after, excluded.expires_after) END
    RETURNING s.id INTO v_id;
    RETURN v_id;
END;
$$;
