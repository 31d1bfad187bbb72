CREATE OR REPLACE FUNCTION mbus.ack_golden(token uuid, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    DELETE FROM mbus.q_golden AS q
    WHERE q.lease_token = token AND q.vt > coalesce(p_now, clock_timestamp());
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, 'golden');
    END IF;
END;
$function$
