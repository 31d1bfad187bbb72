CREATE OR REPLACE FUNCTION mbus.clear_queue_golden_secure(p_now timestamp with time zone DEFAULT NULL::timestamp with time zone)
 RETURNS bigint
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog'
AS $function$
DECLARE
    v_count bigint;
BEGIN
    DELETE FROM mbus.q_golden_secure AS q
    WHERE q.expires <= coalesce(mbus.given_clock(p_now), clock_timestamp());
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$function$
