-- Function: mbus.floor_guard()
--
-- Purpose:  The trigger (BEFORE INSERT OR UPDATE OF vt, FOR EACH ROW) on every queue table that
--           keeps the queue's claim floor (q_<q>$floor, epoch µs; not called: no floor) a lower
--           bound of the vt of its live deliveries, which claims scan from. A write that only
--           raises vt (a lease, extend) needs nothing. Any other takes the floor lock shared to
--           commit (mbus.floor_advance takes it exclusively) and lowers the floor when the
--           row's vt is below it.
-- Params:   TG_ARGV[0]  the floor sequence (mbus.q_<qname>$floor, text)
--           TG_ARGV[1]  the queue's lock key, hashtext(qname) (integer as text)
-- Returns:  trigger: NEW
-- Locks:    pg_advisory_xact_lock_shared(1835165045, key) to commit; a lowering also
--           pg_advisory_xact_lock(1835165046, key) to commit, around its read and setval
-- Calls:    none
-- Tables:   none
-- Design:   docs/DESIGN.md#floor_guard-and-floor_advance-the-claim-floor
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
