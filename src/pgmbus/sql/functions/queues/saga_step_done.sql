-- Function: mbus.saga_step_done(saga_id, step, compensation)
--
-- Purpose:  saga_step_done(saga_id, step, compensation): record that a step's forward (or compensation)
--           handler did its work; call it in the handler's transaction.
-- Params:   saga_id bigint FILL
--           step text FILL
--           compensation boolean DEFAULT false FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.saga_step_done(saga_id bigint, step text, compensation boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF compensation THEN
        UPDATE mbus.saga_step AS st SET compensated_at = clock_timestamp()
        WHERE st.saga_id = saga_step_done.saga_id AND st.step = saga_step_done.step;
    ELSE
        UPDATE mbus.saga_step AS st SET done_at = clock_timestamp()
        WHERE st.saga_id = saga_step_done.saga_id AND st.step = saga_step_done.step;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('saga %s has no step %L', saga_id, step);
    END IF;
END;
$$;
