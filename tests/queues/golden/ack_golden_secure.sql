CREATE OR REPLACE FUNCTION mbus.ack_golden_secure(token uuid, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
BEGIN
    DELETE FROM mbus.q_golden_secure AS q
    WHERE q.lease_token = token AND q.vt > coalesce(p_now, clock_timestamp());
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, 'golden_secure');
    END IF;
END;
$function$
