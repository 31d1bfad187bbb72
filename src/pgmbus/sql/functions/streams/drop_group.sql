-- Function: mbus.drop_group(name)
--
-- Purpose:  drop_group(name): remove a group, its cursors, retries and dead letters.
-- Params:   name text FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.drop_group(name text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    DELETE FROM mbus.stream_groups AS g WHERE g.name = drop_group.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer group %L does not exist', drop_group.name);
    END IF;
END;
$$;
