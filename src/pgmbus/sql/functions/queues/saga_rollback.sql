-- Function: mbus.saga_rollback(saga_id, reason)
--
-- Purpose:  Start the rollback of a running saga: take the bung and every forward message it lists
--           (waiting for handlers that hold one to finish), and the final message, so the
--           compensations of the steps already done become consumable; the saga becomes
--           'compensating'. Returns false when there was nothing to take (the saga completed, or
--           another handler rolled it back first). While another transaction is rolling the same
--           saga back this raises 55P03 (lock_not_available) at once instead of waiting (which
--           could deadlock with that transaction waiting for the caller's own message): the caller
--           rolls back, which frees its message for the other rollback.
-- Params:   saga_id  the saga's id (bigint)
--           reason   why it is rolled back (text; stored on the saga)
-- Returns:  boolean: true when this call started the rollback; MB002 for an unknown saga
-- Locks:    row lock FOR UPDATE NOWAIT on the mbus.saga row (55P03 when held), then its UPDATE;
--           mbus.take's DELETEs of the bung and the forward messages, waiting for transactions that
--           hold them
-- Calls:    mbus.take
-- Tables:   mbus.saga
CREATE OR REPLACE FUNCTION mbus.saga_rollback(saga_id bigint, reason text DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    s mbus.saga;
    b mbus.qt_model;
    x text;
BEGIN
    SELECT * INTO s FROM mbus.saga AS g WHERE g.saga_id = saga_rollback.saga_id FOR UPDATE NOWAIT;
    IF s.saga_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002', MESSAGE = format('saga %s does not exist', saga_id);
    END IF;
    IF s.state <> 'running' THEN
        RETURN false;
    END IF;
    SELECT * INTO b FROM mbus.take(s.bung_iid) LIMIT 1;
    IF b.id IS NULL THEN
        RETURN false;
    END IF;
    FOR x IN SELECT jsonb_array_elements_text(b.data -> 'take') LOOP
        PERFORM mbus.take(x);
    END LOOP;
    UPDATE mbus.saga AS g SET state = 'compensating', reason = saga_rollback.reason
    WHERE g.saga_id = s.saga_id;
    RETURN true;
END;
$$;
