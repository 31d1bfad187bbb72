-- Function: mbus.ensure_role(role, strict)
--
-- Purpose:  Create the NOLOGIN role unless it exists, with the rights the generic entry points need
--           (USAGE on schema mbus, SELECT on mbus.queue and mbus.consumer, USAGE on
--           mbus.msg_id_seq). A name over 63 bytes (PostgreSQL would truncate it) or missing
--           CREATEROLE is an error when strict (a roles-security queue), else a NOTICE and no role.
--           Every role it makes or keeps carries pgmbus's mark (a comment naming this database and
--           its oid). A role left by a dropped database of the same name (mbus.role_orphaned) is
--           adopted: its old members are revoked (their grants were for the dropped database)
--           and it gets this database's rights and mark.
-- Params:   role    the role's name (text)
--           strict  raise instead of a NOTICE (boolean; the queue's roles_security)
-- Returns:  void; MB006 for a long name when strict, or the insufficient_privilege error
-- Locks:    none of its own (CREATE ROLE, GRANT, REVOKE and COMMENT write the shared catalogs)
-- Calls:    mbus.role_orphaned
-- Tables:   mbus.consumer, mbus.queue
CREATE OR REPLACE FUNCTION mbus.ensure_role(role text, strict boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_mark   text := format('made by pgmbus for database %s (oid %s)', current_database(),
                            (SELECT d.oid FROM pg_database AS d
                             WHERE d.datname = current_database()));
    v_exists boolean;
    v_member text;
BEGIN
    IF octet_length(role) > 63 THEN
        IF strict THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('role name %s is longer than 63 bytes; use shorter names', role);
        END IF;
        RAISE NOTICE 'role % not created: longer than 63 bytes', role;
        RETURN;
    END IF;
    v_exists := EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = role);
    IF v_exists AND has_schema_privilege(role, 'mbus', 'USAGE') THEN
        -- ours already; an older pgmbus made it without the mark
        IF shobj_description(role::regrole, 'pg_authid') IS DISTINCT FROM v_mark THEN
            BEGIN
                EXECUTE format('COMMENT ON ROLE %I IS %L', role, v_mark);
            EXCEPTION WHEN insufficient_privilege THEN
                NULL;
            END;
        END IF;
        RETURN;
    END IF;
    IF v_exists AND NOT mbus.role_orphaned(role) THEN
        RETURN;  -- someone else's role: mbus.name_clash refuses the name before this point
    END IF;
    BEGIN
        IF v_exists THEN
            FOR v_member IN SELECT pg_get_userbyid(m.member) FROM pg_auth_members AS m
                            WHERE m.roleid = role::regrole LOOP
                EXECUTE format('REVOKE %I FROM %I', role, v_member);
            END LOOP;
            RAISE NOTICE 'role % adopted: it was left by a dropped database named %',
                role, current_database();
        ELSE
            EXECUTE format('CREATE ROLE %I NOLOGIN', role);
        END IF;
        EXECUTE format('COMMENT ON ROLE %I IS %L', role, v_mark);
        EXECUTE format('GRANT USAGE ON SCHEMA mbus TO %I', role);
        EXECUTE format('GRANT SELECT ON mbus.queue, mbus.consumer TO %I', role);
        EXECUTE format('GRANT USAGE ON SEQUENCE mbus.msg_id_seq TO %I', role);
    EXCEPTION WHEN insufficient_privilege THEN
        IF strict THEN
            RAISE;
        END IF;
        RAISE NOTICE 'role % not created: %', role, SQLERRM;
    END;
END;
$$;
