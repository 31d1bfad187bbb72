CREATE OR REPLACE FUNCTION mbus.ack_golden_secure(token uuid, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_c   integer;
    v_n   bigint;  -- counter: deliveries the row's consumer consumed
BEGIN
    CASE right(token::text, 1)
    WHEN '0' THEN
        DELETE FROM mbus."q_golden_secure$0" AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, CASE q.c WHEN 4 THEN nextval('mbus."q_golden_secure$c4$consumed"') END INTO v_c, v_n;
    WHEN '1' THEN
        DELETE FROM mbus."q_golden_secure$1" AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, CASE q.c WHEN 4 THEN nextval('mbus."q_golden_secure$c4$consumed"') END INTO v_c, v_n;
    WHEN '2' THEN
        DELETE FROM mbus."q_golden_secure$2" AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, CASE q.c WHEN 4 THEN nextval('mbus."q_golden_secure$c4$consumed"') END INTO v_c, v_n;
    WHEN '3' THEN
        DELETE FROM mbus."q_golden_secure$3" AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, CASE q.c WHEN 4 THEN nextval('mbus."q_golden_secure$c4$consumed"') END INTO v_c, v_n;
    ELSE
        NULL;
    END CASE;
    IF v_c IS NULL THEN
        DELETE FROM mbus.q_golden_secure AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, CASE q.c WHEN 4 THEN nextval('mbus."q_golden_secure$c4$consumed"') END INTO v_c, v_n;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'MB007',
                MESSAGE = format('lease %s on queue %s is no longer held', token, 'golden_secure');
        END IF;
    END IF;
END;
$function$
