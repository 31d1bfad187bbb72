-- Function: mbus.iid_window()
--
-- Purpose:  How long a client-given iid is remembered after its post (setting queues.iid_window,
--           default 24 hours): within it a post of the same iid to the same queue stores nothing
--           (mbus.client_iids), whether the first message is still pending or not.
-- Params:   none
-- Returns:  interval
-- Locks:    none (reads mbus.settings)
-- Calls:    mbus.get_setting
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.iid_window()
RETURNS interval
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT (mbus.get_setting('queues.iid_window', '"24 hours"') #>> '{}')::interval;
$$;
