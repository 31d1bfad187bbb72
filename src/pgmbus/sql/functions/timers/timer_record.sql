-- Function: mbus.timer_record(p_results, p_now)
--
-- Purpose:  Record the dispatcher's delivery results, a batch in one call, isolated per result:
--           set-based (mbus.timer_record_batch) in a subtransaction; when that fails on a value
--           (class 22 or 23), each result alone in its own subtransaction, and one that still
--           fails finishes its callback as 'failed' with the error
--           (mbus.timer_record_unrecordable). One bad row never fails the others. Other errors
--           (locks, serialization, resources) are raised. Costs one subtransaction per batch,
--           one per result on the slow path.
-- Params:   p_results  a JSON array of {id, attempt, dispatcher, outcome, calls: [{call,
--                      started_at, finished_at, outcome, status_code, error}]}, outcome one of
--                      ok, reject, refused, error; errors are cut to 2000 characters
--           p_now      the clock (NULL = now()): finished_at, the retry's base time
-- Returns:  integer: the number of results applied (claims current, plus unrecordable results
--           finished as failed)
-- Locks:    as mbus.timer_record_batch: attempts inserted, the callbacks whose claim is current
--           locked FOR UPDATE in id order and updated; held to commit
-- Calls:    mbus.given_clock, mbus.timer_record_batch, mbus.timer_record_unrecordable
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.timer_record(p_results jsonb, p_now timestamptz DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
SET jit = off
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), now());
    v_applied integer := 0;
    v_state text;
    v_error text;
    x jsonb;
BEGIN
    BEGIN
        RETURN mbus.timer_record_batch(p_results, v_now);
    EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
        IF jsonb_typeof(p_results) IS DISTINCT FROM 'array' THEN
            RAISE;
        END IF;
    END;
    FOR x IN SELECT e FROM jsonb_array_elements(p_results) AS e LOOP
        BEGIN
            v_applied := v_applied + mbus.timer_record_batch(jsonb_build_array(x), v_now);
        EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_error = MESSAGE_TEXT;
            v_applied := v_applied
                + mbus.timer_record_unrecordable(x, v_error || ' (' || v_state || ')', v_now);
        END;
    END LOOP;
    RETURN v_applied;
END;
$$;
