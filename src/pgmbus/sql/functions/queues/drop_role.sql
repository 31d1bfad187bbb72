-- Function: mbus.drop_role(role)
--
-- Purpose:  drop_role(role): drop a role made by ensure_role (its grants in this database first).
-- Params:   role text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.drop_role(role text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles AS r WHERE r.rolname = role) THEN
        RETURN;
    END IF;
    BEGIN
        EXECUTE format('DROP OWNED BY %I', role);
        EXECUTE format('DROP ROLE %I', role);
    EXCEPTION WHEN insufficient_privilege OR dependent_objects_still_exist THEN
        RAISE NOTICE 'role % not dropped: %', role, SQLERRM;
    END;
END;
$$;
