-- Function: mbus.transfer_post(qname, message)
--
-- Purpose:  Post one element of a transfer (mbus.transfer_take's form) to queue qname with its
--           own iid, times, payloads and priority: the one place a route and a queue move turn
--           a transferred message back into a post. The priority is the element's 'priority',
--           else its headers.priority (an element of a sending side that kept it there), else 0;
--           it is taken out of the headers, where a claim puts it back from the row.
--           post_<qname> appends this database to seenby and keeps source_db
--           (mbus.stamp_headers).
-- Params:   qname    a queue of this database, checked by the caller (text)
--           message  one element {iid, data, headers, properties, delayed_until, expires,
--                    priority} (jsonb)
-- Returns:  void; MB006 for a priority that is not a whole number in 0..32767, MB005 for a
--           payload post_<qname> refuses
-- Locks:    those of post_<qname>
-- Calls:    mbus.generated_name
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.transfer_post(qname text, message jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_headers jsonb := message -> 'headers';
    v_prio    jsonb := coalesce(message -> 'priority', v_headers -> 'priority', '0');
BEGIN
    -- CASE, not OR: a string must not reach the cast to numeric
    IF (CASE WHEN jsonb_typeof(v_prio) = 'number'
             THEN v_prio::numeric NOT BETWEEN 0 AND 32767
                  OR v_prio::numeric <> trunc(v_prio::numeric)
             ELSE true END) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('the priority of message %L must be a whole number in 0..32767, '
                             'not %s', message ->> 'iid', v_prio);
    END IF;
    IF jsonb_typeof(v_headers) = 'object' THEN
        v_headers := v_headers - 'priority';
    END IF;
    EXECUTE format('SELECT mbus.%I($1, $2, $3, $4, $5, $6, priority => $7)',
                   mbus.generated_name('function', 'post', qname))
    USING message -> 'data', v_headers,
        CASE WHEN jsonb_typeof(message -> 'properties') = 'object' THEN message -> 'properties' END,
        (message ->> 'delayed_until')::timestamptz, (message ->> 'expires')::timestamptz,
        message ->> 'iid', v_prio::numeric::integer;
END;
$$;
