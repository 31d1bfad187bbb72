-- Function: mbus.saga_step_done(saga_id, step, compensation)
--
-- Purpose:  Record that a step's forward (or compensation) handler did its work; call it in the
--           handler's transaction, so the record and the consume commit together. Only bookkeeping
--           for mbus.sagas: the scheduling is done by the messages.
-- Params:   saga_id       the saga's id (bigint)
--           step          the step's name (text)
--           compensation  true for the compensation handler (boolean; default false)
-- Returns:  void; MB002 when the saga has no such step
-- Locks:    row lock of the mbus.saga_step row (UPDATE)
-- Calls:    none
-- Tables:   mbus.saga_step
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
