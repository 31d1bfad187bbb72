CREATE OR REPLACE FUNCTION mbus.ack_golden(token uuid, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_c integer;
BEGIN
    DELETE FROM mbus.q_golden AS q
    WHERE q.lease_token = token AND q.vt > coalesce(p_now, clock_timestamp())
    RETURNING q.c INTO v_c;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, 'golden');
    END IF;
    PERFORM CASE v_c WHEN 1 THEN nextval('mbus."q_golden$c1$consumed"') WHEN 2 THEN nextval('mbus."q_golden$c2$consumed"') END;  -- counter: deliveries the row's consumer consumed
END;
$function$
