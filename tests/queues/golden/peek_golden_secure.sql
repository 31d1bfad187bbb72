CREATE OR REPLACE FUNCTION mbus.peek_golden_secure(msgid text DEFAULT NULL::text)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'pg_temp'
AS $function$
DECLARE
    v_id bigint := mbus.iid_id(msgid, 'golden_secure');
BEGIN
    IF msgid IS NULL THEN
        RETURN EXISTS (SELECT 1 FROM mbus.q_golden_secure);
    ELSIF v_id IS NOT NULL THEN
        RETURN EXISTS (SELECT 1 FROM mbus.q_golden_secure AS q WHERE q.id = v_id AND q.iid IS NULL);
    END IF;
    RETURN EXISTS (SELECT 1 FROM mbus.q_golden_secure AS q WHERE q.iid = msgid);
END;
$function$
