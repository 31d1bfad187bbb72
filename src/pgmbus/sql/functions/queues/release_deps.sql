-- Function: mbus.release_deps(iid)
--
-- Purpose:  Run at commit by the transaction that removed a delivery of iid (or a dmq row). When
--           iid exists nowhere any more, every message waiting on it has one dependency less;
--           those with none left become claimable (vt back to delayed_until or added, and a
--           NOTIFY when a session waits on their queue), exactly once. Copies of iid put back
--           since (dmq replay, a re-post with the old iid) are marked waited, so their consume
--           releases later. Needs READ COMMITTED: other isolation levels get MB008 instead of a
--           wrong answer. SECURITY DEFINER: the consuming role need not see the waiting queues.
-- Params:   iid  the removed dependency's iid (text)
-- Returns:  integer: how many waiting messages became claimable
-- Locks:    pg_advisory_xact_lock(1835165042, hashtext(iid)), held to commit; UPDATE (row locks) of
--           iid's remaining deliveries; DELETE of its mbus.msg_dep rows; row locks on the waiting
--           messages' mbus.msg_wait rows (UPDATE, DELETE) and UPDATE of their deliveries (those
--           UPDATEs through the queues' generated deps_<q>)
-- Calls:    mbus.dep_rows, mbus.generated_name
-- Tables:   mbus.dmq, mbus.msg_dep, mbus.msg_wait, mbus.queue, mbus.queue_waiter
-- Design:   docs/DESIGN.md#await_deps-and-release_deps-waits-that-cost-a-claim-nothing
CREATE OR REPLACE FUNCTION mbus.release_deps(iid text)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r        record;
    w        record;
    v_copies bigint;   -- deliveries of iid left
    v_left   integer;  -- dependencies a waiting message has left
    v_freed  integer := 0;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mbus.msg_dep AS d WHERE d.dep_iid = release_deps.iid) THEN
        RETURN 0;
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('message %s has dependants; consume it in a READ COMMITTED transaction', iid);
    END IF;
    PERFORM pg_advisory_xact_lock(1835165042, hashtext(iid));
    r := mbus.dep_rows(iid);
    IF r.fn IS NOT NULL THEN
        -- Copies put back since (dmq replay, a re-post with the old iid) get marked, so their
        -- consume releases later; then: is any copy left? (deps_<q> of the iid's queue)
        EXECUTE format('SELECT mbus.%I($1, $2, $3)', r.fn) INTO v_copies USING 'release'::text, iid, r.id;
        IF v_copies > 0 THEN
            RETURN 0;
        END IF;
    END IF;
    IF EXISTS (SELECT 1 FROM mbus.dmq AS x WHERE x.iid = release_deps.iid) THEN
        RETURN 0;  -- a dead dependency keeps blocking until replayed and consumed, or deleted
    END IF;
    FOR w IN DELETE FROM mbus.msg_dep AS d WHERE d.dep_iid = release_deps.iid
             RETURNING d.qname, d.id LOOP
        UPDATE mbus.msg_wait AS m SET pending = m.pending - 1
        WHERE m.qname = w.qname AND m.id = w.id
        RETURNING m.pending INTO v_left;
        CONTINUE WHEN v_left IS DISTINCT FROM 0;
        DELETE FROM mbus.msg_wait AS m WHERE m.qname = w.qname AND m.id = w.id;
        IF EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = w.qname) THEN
            -- deps_<q> of the waiting message's queue (the name mbus.generated_names gives)
            EXECUTE format('SELECT mbus.%I($1, $2, $3)',
                           mbus.generated_name('function', 'deps', w.qname))
            USING 'free'::text, NULL::text, w.id;
            IF EXISTS (SELECT 1 FROM mbus.queue_waiter AS x WHERE x.qname = w.qname) THEN
                PERFORM pg_notify('mbus_q_' || w.qname, w.qname);
            END IF;
            v_freed := v_freed + 1;
        END IF;
    END LOOP;
    RETURN v_freed;
END;
$$;
