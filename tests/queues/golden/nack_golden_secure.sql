CREATE OR REPLACE FUNCTION mbus.nack_golden_secure(token uuid, delay interval DEFAULT '00:00:00'::interval, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
BEGIN
    IF delay IS NULL OR delay < '0'::interval OR delay > '100 years'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('nack delay %s is out of range (>= 0, at most 100 years)', delay);
    END IF;
    UPDATE mbus.q_golden_secure AS q SET vt = v_now + delay, lease_token = NULL
    WHERE q.lease_token = token AND q.vt > v_now;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, 'golden_secure');
    END IF;
END;
$function$
