-- streams: conditions that are not the owner's run without table privileges.
--   * mbus.subscriptions.full_language: true only for a condition the owner of
--     mbus.subscriptions subscribed through mbus.subscribe (the full language, run with the
--     reader's role, as before). Every other row (an HTTP key's, a SQL role's, a row inserted
--     by hand) is matched by mbus._match_sandboxed, which runs as the NOLOGIN role
--     mbus_condition: no privilege on any table, nor on schema mbus.
--   * Existing rows keep the reader's role only when their condition is outside the restricted
--     grammar (only the owner could store those); the others move to the sandbox, where they
--     match exactly as before (the grammar names only the event and the subscription).

ALTER TABLE mbus.subscriptions ADD COLUMN full_language boolean NOT NULL DEFAULT false;

DO $$
BEGIN
    -- the grammar's check is a function of an earlier release; a fresh install has no rows
    IF to_regprocedure('mbus._restricted_condition_error(text)') IS NOT NULL
       AND EXISTS (SELECT 1 FROM mbus.subscriptions) THEN
        EXECUTE 'UPDATE mbus.subscriptions AS s SET full_language = true '
                'WHERE mbus._restricted_condition_error(s.condition) IS NOT NULL';
    END IF;
END;
$$;
