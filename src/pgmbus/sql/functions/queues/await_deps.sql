-- Function: mbus.await_deps(qname, id, iid, deps)
--
-- Purpose:  await_deps(qname, id, iid, deps): called by post_<qname> for a message with consume_after.
--           Locks and marks the deliveries of every dependency that still exists (an UPDATE: a consume
--           of it in progress is waited for, then seen gone), records the edges, and returns true when
--           the message must wait.
-- Params:   qname text FILL
--           id bigint FILL
--           iid text FILL
--           deps text[] FILL
-- Returns:  boolean
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.await_deps(qname text, id bigint, iid text, deps text[])
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    d      text;
    r      record;
    n      bigint;
    v_new  bigint;
    v_left integer := 0;
BEGIN
    IF deps IS NULL THEN
        RETURN false;
    END IF;
    FOREACH d IN ARRAY deps LOOP
        CONTINUE WHEN d = iid;
        n := 0;
        r := mbus.dep_rows(d);
        IF r.tbl IS NOT NULL THEN
            -- FOR SHARE waits for a consume in progress; only unmarked rows are updated (many
            -- dependants of one message do not make a new row version each).
            EXECUTE format('SELECT count(*), count(*) FILTER (WHERE NOT x.waited) '
                           'FROM (SELECT q.waited FROM mbus.%I AS q WHERE %s FOR SHARE) AS x',
                           r.tbl, r.cond) INTO n, v_new USING d;
            IF v_new > 0 THEN
                EXECUTE format('UPDATE mbus.%I AS q SET waited = true WHERE %s AND NOT q.waited',
                               r.tbl, r.cond) USING d;
            END IF;
        END IF;
        IF n = 0 THEN
            PERFORM 1 FROM mbus.dmq AS x WHERE x.iid = d FOR KEY SHARE;
            CONTINUE WHEN NOT FOUND;
        END IF;
        INSERT INTO mbus.msg_dep (dep_iid, qname, id) VALUES (d, await_deps.qname, await_deps.id)
        ON CONFLICT DO NOTHING;
        v_left := v_left + 1;
    END LOOP;
    IF v_left = 0 THEN
        RETURN false;
    END IF;
    INSERT INTO mbus.msg_wait (qname, id, iid, pending) VALUES (qname, id, iid, v_left)
    ON CONFLICT ON CONSTRAINT msg_wait_pkey
    DO UPDATE SET pending = mbus.msg_wait.pending + excluded.pending;
    RETURN true;
END;
$$;
