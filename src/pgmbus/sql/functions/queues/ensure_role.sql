-- Function: mbus.ensure_role(role, strict)
--
-- Purpose:  ensure_role(role, strict): create the NOLOGIN role (with the rights the generic entry points
--           need) unless it exists. A name over 63 bytes or missing CREATEROLE is an error when strict
--           (a roles-security queue), else a NOTICE.
-- Params:   role text FILL
--           strict boolean FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
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
