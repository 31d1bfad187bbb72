-- Function: mbus.timer_record_unrecordable(p_result, p_error, p_now)
--
-- Purpose:  A result that cannot be recorded (its values break a cast or a constraint, even
--           alone) finishes its callback as 'failed' with last_error 'result not recordable:
--           <error>' and a 'status' change log row, when its claim is still current. Nothing is
--           retried from a result that cannot be read: calling the URL again would meet the
--           same values. A result whose id or attempt cannot even be read changes nothing (its
--           claim expires).
-- Params:   p_result  one element of timer_record's p_results
--           p_error   the error and SQLSTATE that recording it alone raised
--           p_now     the clock
-- Returns:  integer: 1 when the callback was finished, else 0
-- Locks:    the callback's row (UPDATE) to commit
-- Calls:    none
-- Tables:   mbus.timer_callbacks, mbus.timer_change_log
CREATE OR REPLACE FUNCTION mbus.timer_record_unrecordable(p_result jsonb, p_error text,
    p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    c mbus.timer_callbacks;
BEGIN
    UPDATE mbus.timer_callbacks AS t SET
        status = 'failed', finished_at = p_now, claimed_by = NULL, claimed_until = NULL,
        last_error = left('result not recordable: ' || p_error, 2000), updated_at = p_now
    WHERE t.id = (p_result->>'id')::bigint AND t.status = 'pending'
      AND t.claimed_by = p_result->>'dispatcher'
      AND t.attempts = (p_result->>'attempt')::integer
    RETURNING * INTO c;
    IF c.id IS NULL THEN
        RETURN 0;
    END IF;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, new_status,
         changes)
    VALUES (p_now, c.id, c.client_id, c.group_key, c.event_key, 'status', 'pending', 'failed',
            jsonb_build_object('attempt', c.attempts, 'error', left(p_error, 500)));
    RETURN 1;
EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
    RETURN 0;  -- not even its id and claim can be read
END;
$$;
