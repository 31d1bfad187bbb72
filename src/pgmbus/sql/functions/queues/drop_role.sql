-- Function: mbus.drop_role(role)
--
-- Purpose:  Drop a role made by mbus.ensure_role: its grants in this database first (DROP OWNED
--           BY), then the role. Missing role: nothing. Not allowed or still used elsewhere (e.g.
--           granted in another database): a NOTICE, and the role stays.
-- Params:   role  the role's name (text)
-- Returns:  void
-- Locks:    none of its own (DROP OWNED locks what the role owns; normally nothing)
-- Calls:    none
-- Tables:   none
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
