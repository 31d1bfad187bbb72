-- Function: mbus.dmq_delete(dmq_id)
--
-- Purpose:  Delete one dead message from mbus.dmq for good (mbus.dmq_replay puts one back
--           instead). A message other messages wait on (consume_after) releases them when it
--           leaves the dmq, as when it is consumed.
-- Params:   dmq_id  the dead message's id (bigint)
-- Returns:  text: the queue the dead message belonged to; MB002 when no dead message has that
--           id; MB006 for NULL
-- Locks:    the mbus.dmq row it deletes
-- Calls:    none
-- Tables:   mbus.dmq
CREATE OR REPLACE FUNCTION mbus.dmq_delete(dmq_id bigint)
RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_q text;
BEGIN
    IF dmq_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'dmq_id must not be NULL';
    END IF;
    DELETE FROM mbus.dmq AS x WHERE x.dmq_id = dmq_delete.dmq_id RETURNING x.qname INTO v_q;
    IF v_q IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('dead message %s does not exist', dmq_id);
    END IF;
    RETURN v_q;
END;
$$;
