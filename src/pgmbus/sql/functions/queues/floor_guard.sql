-- Function: mbus.floor_guard()
--
-- Purpose:  The trigger (BEFORE INSERT OR UPDATE OF vt, FOR EACH ROW) on every queue table that
--           keeps the queue's claim floor a lower bound of the vt of its live deliveries. Claims
--           scan their FIFO index from the floor (vt >= floor) instead of from the start, so the
--           consumed entries a held xmin horizon keeps before it are not walked by every claim.
--           A write that only raises vt (a lease, extend) needs nothing. Any other write takes
--           the queue's floor lock shared, held to the end of its transaction, so the floor
--           cannot move past the row before it is committed and visible (mbus.floor_advance
--           takes it exclusively), and lowers the floor when the row's vt is below it: a post
--           with an old clock, delayed_until or a long transaction's now(), a nack, a released
--           dependency, a replay. Lowerers hold a second lock from their read-and-set to
--           commit, so two of them cannot leave the higher of their values. The floor is a sequence
--           (epoch microseconds; not called: no floor): reading it touches one buffer and
--           setval is not transactional, so a held horizon piles up no versions of it.
-- Params:   TG_ARGV[0]  the floor sequence (mbus.q_<qname>$floor, text)
--           TG_ARGV[1]  the queue's lock key, hashtext(qname) (integer as text)
-- Returns:  trigger: NEW
-- Locks:    pg_advisory_xact_lock_shared(1835165045, key) to commit; a lowering also
--           pg_advisory_xact_lock(1835165046, key) to commit, around its read and setval
-- Calls:    none
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.floor_guard()
RETURNS trigger
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_seq   regclass;
    v_floor bigint;
BEGIN
    -- Operators qualified: no SET search_path (a clause costs every row), and a caller's
    -- search_path must not change what this compares.
    IF TG_OP OPERATOR(pg_catalog.=) 'UPDATE' AND NEW.vt OPERATOR(pg_catalog.>=) OLD.vt THEN
        RETURN NEW;  -- raised: the floor below the old vt is below the new one
    END IF;
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(1835165045, TG_ARGV[1]::integer);
    v_seq := TG_ARGV[0]::regclass;
    v_floor := pg_catalog.pg_sequence_last_value(v_seq);
    IF v_floor IS NOT NULL
       AND NEW.vt OPERATOR(pg_catalog.<) (pg_catalog.to_timestamp(0)
           OPERATOR(pg_catalog.+) (v_floor OPERATOR(pg_catalog.*) interval '1 microsecond')) THEN
        -- Held to commit (a session lock could outlive a cancel that races its grant); only
        -- a lowerer below this one's vt waits for it, as the floor cannot rise meanwhile.
        PERFORM pg_catalog.pg_advisory_xact_lock(1835165046, TG_ARGV[1]::integer);
        v_floor := pg_catalog.pg_sequence_last_value(v_seq);
        IF NEW.vt OPERATOR(pg_catalog.=) '-infinity'::timestamptz THEN
            PERFORM pg_catalog.setval(v_seq, 1, false);  -- no floor
        ELSIF v_floor IS NOT NULL THEN
            PERFORM pg_catalog.setval(v_seq, least(v_floor, pg_catalog.floor(
                EXTRACT(epoch FROM NEW.vt) OPERATOR(pg_catalog.*) 1000000::numeric)::bigint));
        END IF;
    END IF;
    RETURN NEW;
END;
$$;
