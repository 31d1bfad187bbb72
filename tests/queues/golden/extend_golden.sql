CREATE OR REPLACE FUNCTION mbus.extend_golden(token uuid, lease interval, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS timestamp with time zone
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
    v_end timestamptz;
BEGIN
    IF lease IS NULL OR lease <= '0'::interval OR lease > '100 years'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease %s is out of range (> 0, at most 100 years)', lease);
    END IF;
    UPDATE mbus.q_golden AS q SET vt = v_now + lease
    WHERE q.lease_token = token AND q.vt > v_now
    RETURNING q.vt INTO v_end;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, 'golden');
    END IF;
    RETURN v_end;
END;
$function$
