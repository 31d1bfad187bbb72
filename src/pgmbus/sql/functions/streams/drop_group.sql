-- Function: mbus.drop_group(name)
--
-- Purpose:  Remove a group with everything that belongs to it: its cursors, pending retries,
--           dead letters and subscriptions go with it (ON DELETE CASCADE). Events stay in the log
--           (other groups may read them; retention drops them).
-- Params:   name  the group's name
-- Returns:  void; MB002 when the group does not exist
-- Locks:    row locks of the deleted rows (the group's row and its cursors, retries, dead letters,
--           subscriptions), held to commit; waits for a transaction holding one of them (a commit
--           in progress, a claimed retry). A reader's advisory lock does not stop it
-- Calls:    none
-- Tables:   mbus.stream_groups
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
