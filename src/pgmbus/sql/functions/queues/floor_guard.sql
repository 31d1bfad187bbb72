-- Function: mbus.floor_guard()
--
-- Purpose:  The guard of the queue's claim floor (q_<q>$floor, epoch µs; not called: no floor), a
--           lower bound of the vt of its live deliveries that claims scan from. Two triggers on
--           each queue table run it: AFTER INSERT FOR EACH STATEMENT (transition table fresh)
--           and BEFORE UPDATE OF vt FOR EACH ROW, which returns at once when vt is not lowered.
--           Otherwise it takes the floor lock shared to commit (mbus.floor_advance takes it
--           exclusively), then reads the floor and lowers it to the lowest new vt below it. AFTER
--           is safe: rows are invisible until commit, and the comparison runs under the lock, so
--           an advance between the insert and the trigger is undone by the lowering.
-- Params:   TG_ARGV[0]  the floor sequence (mbus.q_<qname>$floor, text)
--           TG_ARGV[1]  the queue's lock key, hashtext(qname) (integer as text)
-- Returns:  trigger: NULL (statement), NEW (row)
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
    v_vt    timestamptz;
BEGIN
    -- Operators qualified: no SET search_path (a clause costs every call), and a caller's
    -- search_path must not change what this compares.
    IF TG_LEVEL OPERATOR(pg_catalog.=) 'STATEMENT' THEN
        SELECT pg_catalog.min(f.vt) INTO v_vt FROM fresh AS f;
        IF v_vt IS NULL THEN
            RETURN NULL;  -- no row inserted
        END IF;
    ELSIF NEW.vt OPERATOR(pg_catalog.>=) OLD.vt THEN
        RETURN NEW;  -- raised: the floor below the old vt is below the new one
    ELSE
        v_vt := NEW.vt;
    END IF;
    -- The lock first, the floor read after it: an advance that read the table before this
    -- write was visible has either set the floor already (read here, then lowered) or waits
    -- for this transaction's end, when the write is visible to its read.
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(1835165045, TG_ARGV[1]::integer);
    v_seq := TG_ARGV[0]::regclass;
    v_floor := pg_catalog.pg_sequence_last_value(v_seq);
    IF v_floor IS NOT NULL
       AND v_vt OPERATOR(pg_catalog.<) (pg_catalog.to_timestamp(0)
           OPERATOR(pg_catalog.+) (v_floor OPERATOR(pg_catalog.*) interval '1 microsecond')) THEN
        -- Held to commit (a session lock could outlive a cancel that races its grant); only
        -- a lowerer below this one's vt waits for it, as the floor cannot rise meanwhile.
        PERFORM pg_catalog.pg_advisory_xact_lock(1835165046, TG_ARGV[1]::integer);
        v_floor := pg_catalog.pg_sequence_last_value(v_seq);
        IF v_vt OPERATOR(pg_catalog.=) '-infinity'::timestamptz THEN
            PERFORM pg_catalog.setval(v_seq, 1, false);  -- no floor
        ELSIF v_floor IS NOT NULL THEN
            PERFORM pg_catalog.setval(v_seq, least(v_floor, pg_catalog.floor(
                EXTRACT(epoch FROM v_vt) OPERATOR(pg_catalog.*) 1000000::numeric)::bigint));
        END IF;
    END IF;
    IF TG_LEVEL OPERATOR(pg_catalog.=) 'STATEMENT' THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END;
$$;
