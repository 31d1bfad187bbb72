-- Function: mbus.await_deps(qname, id, iid, deps)
--
-- Purpose:  Decide whether a message posted with consume_after must wait, and record the wait.
--           It waits on every iid of deps that still exists (in the queue its iid names, or dead
--           in mbus.dmq); unknown iids are satisfied. A re-posted iid that would close a cycle is
--           refused (MB006). An iid of another database waits while a delivery of it received
--           here is pending or dead here, is satisfied once received and gone, and is refused
--           (MB006) if never received. A message received from another database is exempt. The
--           edges go to mbus.msg_dep, the count left to mbus.msg_wait; the post then gives the
--           waiting deliveries vt = 'infinity'.
-- Params:   qname  the queue the message is posted to (text)
--           id     the message's id (bigint)
--           iid    the message's iid (text; a dependency on itself is ignored)
--           deps   the iids it waits for (text[], from mbus.dep_list; NULL = none)
-- Returns:  boolean: true when the message must wait; MB006 for a dependency that would close a
--           cycle, or one of another database that never came here
-- Locks:    FOR SHARE row locks on the dependencies' deliveries, then UPDATE (row locks) of the
--           unmarked ones, held to commit; FOR KEY SHARE on a dependency's mbus.dmq row; INSERT
--           into mbus.msg_dep and an upsert of the message's mbus.msg_wait row
-- Calls:    mbus.dep_rows, mbus.generated_name, mbus.queue_of_iid
-- Tables:   mbus.dmq, mbus.exchange_received, mbus.msg_dep, mbus.msg_wait, mbus.queue
-- Design:   docs/DESIGN.md#await_deps-and-release_deps-waits-that-cost-a-claim-nothing
CREATE OR REPLACE FUNCTION mbus.await_deps(qname text, id bigint, iid text, deps text[])
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    d      text;
    r      record;
    n      bigint;
    v_left integer := 0;
    v_q    text;
    v_far  boolean;  -- d names another database
BEGIN
    IF deps IS NULL THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.msg_dep AS m WHERE m.dep_iid = await_deps.iid) THEN
        -- iid is waited for already (put back with its old iid): its waiters, transitively
        SELECT w.iid INTO d
        FROM (WITH RECURSIVE waiter (iid) AS (
                  SELECT mw.iid FROM mbus.msg_dep AS md
                  JOIN mbus.msg_wait AS mw ON mw.qname = md.qname AND mw.id = md.id
                  WHERE md.dep_iid = await_deps.iid
                  UNION
                  SELECT mw.iid FROM waiter AS x
                  JOIN mbus.msg_dep AS md ON md.dep_iid = x.iid
                  JOIN mbus.msg_wait AS mw ON mw.qname = md.qname AND mw.id = md.id)
              SELECT x.iid FROM waiter AS x) AS w
        WHERE w.iid = ANY (deps) AND w.iid <> await_deps.iid
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('consume_after %s would make a cycle: it waits (directly or '
                                 'through others) for %s, posted again here', d, iid);
        END IF;
    END IF;
    FOREACH d IN ARRAY deps LOOP
        CONTINUE WHEN d = iid;
        n := 0;
        r := mbus.dep_rows(d);
        IF r.fn IS NOT NULL THEN
            -- the dependency's queue locks its deliveries FOR SHARE and marks them (deps_<q>)
            EXECUTE format('SELECT mbus.%I($1, $2, $3)', r.fn) INTO n USING 'await'::text, d, r.id;
        END IF;
        v_far := coalesce((regexp_match(d, '^[a-z][a-z0-9_]*\.[0-9]+@(.*)$'))[1]
                          <> current_database(), false);
        IF n = 0 AND v_far THEN
            -- received into another queue than the one its iid names: deps_ of each queue in
            -- turn (its 'await' finds, locks and marks the deliveries by the iid column)
            FOR v_q IN SELECT q.qname FROM mbus.queue AS q
                       WHERE q.qname IS DISTINCT FROM mbus.queue_of_iid(d) ORDER BY q.qname LOOP
                EXECUTE format('SELECT mbus.%I($1, $2, $3)',
                               mbus.generated_name('function', 'deps', v_q)) INTO n
                USING 'await'::text, d, NULL::bigint;
                EXIT WHEN n > 0;
            END LOOP;
        END IF;
        IF n = 0 THEN
            PERFORM 1 FROM mbus.dmq AS x WHERE x.iid = d FOR KEY SHARE;
            IF NOT FOUND THEN
                IF v_far
                   AND NOT EXISTS (SELECT 1 FROM mbus.exchange_received AS x WHERE x.iid = d)
                   AND NOT EXISTS (SELECT 1 FROM mbus.exchange_received AS x
                                   WHERE x.iid = await_deps.iid) THEN
                    RAISE EXCEPTION USING ERRCODE = 'MB006',
                        MESSAGE = format('consume_after %s names a message of another database '
                                         '(%s) that never came here: a message can wait only '
                                         'for one in this database', d,
                                         (regexp_match(d, '@(.*)$'))[1]),
                        HINT = 'route the message here first (mbus.create_route), or post '
                               'this one where it is';
                END IF;
                CONTINUE;
            END IF;
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
