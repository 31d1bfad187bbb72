CREATE OR REPLACE FUNCTION mbus.ack_golden_secure(token uuid, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
    v_c integer;
BEGIN
    DELETE FROM mbus.q_golden_secure AS q
    WHERE q.lease_token = token AND q.vt > coalesce(p_now, clock_timestamp())
    RETURNING q.c INTO v_c;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, 'golden_secure');
    END IF;
    PERFORM CASE v_c WHEN 4 THEN nextval('mbus."q_golden_secure$c4$consumed"') END;  -- counter: deliveries the row's consumer consumed
END;
$function$
