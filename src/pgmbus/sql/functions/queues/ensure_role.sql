-- Function: mbus.ensure_role(role, strict)
--
-- Purpose:  Create the NOLOGIN role unless it exists, with the rights the generic entry points need
--           (USAGE on schema mbus, SELECT on mbus.queue and mbus.consumer, USAGE on
--           mbus.msg_id_seq). A name over 63 bytes (PostgreSQL would truncate it) or missing
--           CREATEROLE is an error when strict (a roles-security queue), else a NOTICE and no role.
-- Params:   role    the role's name (text)
--           strict  raise instead of a NOTICE (boolean; the queue's roles_security)
-- Returns:  void; MB006 for a long name when strict, or the insufficient_privilege error
-- Locks:    none of its own (CREATE ROLE and GRANT write the shared catalogs)
-- Callers:  mbus.consumer_role, mbus.queue_created
CREATE OR REPLACE FUNCTION mbus.ensure_role(role text, strict boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF octet_length(role) > 63 THEN
        IF strict THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('role name %s is longer than 63 bytes; use shorter names', role);
        END IF;
        RAISE NOTICE 'role % not created: longer than 63 bytes', role;
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = role) THEN
        RETURN;
    END IF;
    BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', role);
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
