-- Function: mbus.clear_tempq()
--
-- Purpose:  Drop the temporary queues and consumers whose session has ended (no backend with their
--           pid and backend start; a backend whose start this role cannot see counts as alive).
--           Consumers go first, then queues. Only what create_temporary_* made is dropped, and only
--           while it is still that object (temp_object.obj_id: the delivery table's oid, the
--           consumer's cid); a queue or consumer made since under the same name is left alone,
--           only the record goes. Returns at once, without the lock, when there is
--           nothing to drop. SECURITY DEFINER: it drops other sessions' objects and must see all of
--           pg_stat_activity.
-- Params:   none
-- Returns:  integer: how many queues and consumers were dropped
-- Locks:    pg_advisory_xact_lock(1835165041) when something is to drop; then the locks of
--           mbus.drop_consumer and mbus.drop_queue (DROP TABLE: ACCESS EXCLUSIVE); DELETE of
--           mbus.temp_object rows
-- Calls:    mbus.drop_consumer, mbus.drop_queue, mbus.generated_name
-- Tables:   mbus.consumer, mbus.queue, mbus.temp_object
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
            IF EXISTS (SELECT 1 FROM mbus.consumer AS c
                       WHERE c.qname = r.qname AND c.cname = r.cname AND c.cid = r.obj_id) THEN
                PERFORM mbus.drop_consumer(r.qname, r.cname);
            END IF;
        ELSIF EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = r.qname)
              AND to_regclass(format('mbus.%I', mbus.generated_name('relation', 'table',
                                                                    r.qname)))::oid::bigint
                  = r.obj_id THEN
            PERFORM mbus.drop_queue(r.qname);
        END IF;
        DELETE FROM mbus.temp_object AS t
        WHERE t.kind = r.kind AND t.qname = r.qname AND t.cname = r.cname;
        v_count := v_count + 1;
    END LOOP;
    RETURN v_count;
END;
$$;
