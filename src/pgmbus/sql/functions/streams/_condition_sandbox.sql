-- Function: mbus._condition_sandbox()
--
-- Purpose:  Make mbus._match_sandboxed run as the NOLOGIN role mbus_condition (created unless it
--           exists; cluster-wide; no privilege): the role owns the function, which becomes
--           SECURITY DEFINER, executable by the owner of mbus.subscriptions. The installer calls
--           it after every function file. A role of that name with any right (LOGIN, SUPERUSER,
--           membership in another role) is refused. Without CREATEROLE it changes nothing and
--           says so (NOTICE): conditions that are not the owner's then run with the reader's
--           role, held by the restricted grammar alone.
-- Params:   none
-- Returns:  boolean: whether the sandbox is in place
-- Locks:    none of its own (CREATE ROLE, GRANT, ALTER FUNCTION write the catalogs)
-- Calls:    mbus._match_sandboxed
-- Tables:   mbus.subscriptions
-- Design:   docs/DESIGN.md#subscription-conditions-checked-restricted-sandboxed
CREATE OR REPLACE FUNCTION mbus._condition_sandbox()
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_fn    regprocedure := 'mbus._match_sandboxed(text, mbus.stream_row[], mbus.subscriptions[])';
    v_owner name := (SELECT pg_get_userbyid(c.relowner) FROM pg_class AS c
                     WHERE c.oid = 'mbus.subscriptions'::regclass);
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = 'mbus_condition') THEN
        BEGIN
            CREATE ROLE mbus_condition NOLOGIN NOINHERIT;
            COMMENT ON ROLE mbus_condition IS
                'made by pgmbus: runs subscription conditions that are not the owner''s';
        EXCEPTION
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'role mbus_condition not created (%): conditions that are not '
                             'the owner''s run with the reader''s role', SQLERRM;
                RETURN false;
            WHEN duplicate_object OR unique_violation THEN
                NULL;  -- made meanwhile by an install into another database
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles AS r
               WHERE r.rolname = 'mbus_condition'
                 AND (r.rolcanlogin OR r.rolsuper OR r.rolcreaterole OR r.rolcreatedb
                      OR r.rolreplication OR r.rolbypassrls
                      OR EXISTS (SELECT 1 FROM pg_auth_members AS m
                                 WHERE m.member = r.oid))) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'role mbus_condition has rights (login, an attribute or a membership): '
                      'it must have none, since it runs conditions that are not the owner''s';
    END IF;
    IF (SELECT p.proowner FROM pg_proc AS p WHERE p.oid = v_fn)
       <> 'mbus_condition'::regrole THEN
        BEGIN
            IF NOT pg_has_role('mbus_condition', 'MEMBER') THEN
                GRANT mbus_condition TO CURRENT_USER;
            END IF;
            GRANT CREATE ON SCHEMA mbus TO mbus_condition;
            EXECUTE format('ALTER FUNCTION %s OWNER TO mbus_condition', v_fn);
            REVOKE CREATE ON SCHEMA mbus FROM mbus_condition;
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'mbus._match_sandboxed not handed to mbus_condition (%): conditions '
                         'that are not the owner''s run with the reader''s role', SQLERRM;
            RETURN false;
        END;
    END IF;
    EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', v_fn);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', v_fn, v_owner);
    RETURN true;
END;
$$;
