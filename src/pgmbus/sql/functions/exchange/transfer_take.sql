-- Function: mbus.transfer_take(qname, cname, amt)
--
-- Purpose:  The sending half of a transfer to another database, shared by routes
--           (mbus.exchange_take) and queue moves (mbus.move_take): consume (mbus.consumen) at
--           most amt ready messages of consumer cname of queue qname, in claim order, as one
--           jsonb array for mbus.transfer_post. The caller's transaction stays open until the
--           other side committed: a crash before rolls back, the re-sent batch is recognised
--           there by its iids. Elements are {iid, data, headers, properties, delayed_until,
--           expires, priority}; headers always carry seenby and source_db; the priority (in
--           headers.priority of a claim) travels as its own field.
-- Params:   qname  a queue of this database (text)
--           cname  its consumer (text)
--           amt    the most messages to take (integer, > 0)
-- Returns:  jsonb: the array (empty when nothing is ready); MB001/MB002 for a bad or unknown
--           queue or consumer, MB006 for amt < 1
-- Locks:    those of consumen_<q>_by_<c>: row locks FOR UPDATE SKIP LOCKED and the DELETE of the
--           claimed deliveries, held to commit
-- Calls:    mbus.consumen
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.transfer_take(qname text, cname text, amt integer)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
BEGIN
    IF amt IS NULL OR amt < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('amt must be >= 1, not %s', amt);
    END IF;
    RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object(
                'iid', m.iid, 'data', m.data, 'headers', m.headers - 'priority',
                'properties', m.properties, 'delayed_until', m.delayed_until,
                'expires', m.expires,
                'priority', coalesce((m.headers ->> 'priority')::integer, 0))
                ORDER BY m.ordinality), '[]')
            FROM mbus.consumen(qname, cname, amt) WITH ORDINALITY AS m);
END;
$$;
