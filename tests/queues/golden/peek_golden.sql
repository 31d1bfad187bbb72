CREATE OR REPLACE FUNCTION mbus.peek_golden(msgid text DEFAULT NULL::text)
 RETURNS boolean
 LANGUAGE plpgsql
 STABLE
 SET search_path TO 'pg_catalog'
AS $function$
DECLARE
    v_id bigint := mbus.iid_id(msgid, 'golden');
BEGIN
    IF msgid IS NULL THEN
        RETURN EXISTS (SELECT 1 FROM mbus.q_golden);
    ELSIF v_id IS NOT NULL THEN
        RETURN EXISTS (SELECT 1 FROM mbus.q_golden AS q WHERE q.id = v_id AND q.iid IS NULL);
    END IF;
    RETURN EXISTS (SELECT 1 FROM mbus.q_golden AS q WHERE q.iid = msgid);
END;
$function$
