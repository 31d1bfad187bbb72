-- Function: mbus.clear_tempq()
--
-- Purpose:  clear_tempq(): drop temporary queues and consumers whose session has ended; returns how many.
-- Params:   none
-- Returns:  integer
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.clear_tempq()
RETURNS integer
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r       record;
    v_count integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mbus.temp_object AS t
                   WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a
                                     WHERE a.pid = t.pid
                                       AND (a.backend_start = t.backend_start
                                            OR a.backend_start IS NULL))) THEN
        RETURN 0;
    END IF;
    PERFORM pg_advisory_xact_lock(1835165041);
    FOR r IN SELECT t.* FROM mbus.temp_object AS t
             WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a
                               WHERE a.pid = t.pid
                                       AND (a.backend_start = t.backend_start
                                            OR a.backend_start IS NULL))
             ORDER BY t.kind DESC LOOP
        IF r.kind = 'consumer' THEN
            IF EXISTS (SELECT 1 FROM mbus.consumer AS c WHERE c.qname = r.qname AND c.cname = r.cname) THEN
                PERFORM mbus.drop_consumer(r.qname, r.cname);
            END IF;
        ELSIF EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = r.qname) THEN
            PERFORM mbus.drop_queue(r.qname);
        END IF;
        DELETE FROM mbus.temp_object AS t
        WHERE t.kind = r.kind AND t.qname = r.qname AND t.cname = r.cname;
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;
