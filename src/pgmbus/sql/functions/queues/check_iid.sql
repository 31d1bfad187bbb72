-- Function: mbus.check_iid(iid, qname)
--
-- Purpose:  Check an iid a client gives to post_<qname>, so that it can never collide with an iid
--           the bus makes. An iid of the generated shape '<name>.<digits>@<this database>' is
--           accepted only as the bus writes it (no leading zero, at most 18 digits) and only for a
--           number mbus.msg_id_seq has handed out already (mbus.get_iid, an earlier post): a
--           forged one ahead of the sequence ('q.127@db') would later meet the real message 127.
--           Any other iid is the client's own (non-empty, at most 200 bytes). No SET search_path
--           (a GUC save and restore per call); every name is qualified.
-- Params:   iid    the client's iid (text, not NULL)
--           qname  the queue posted to (text)
-- Returns:  bigint: the message id when iid is this queue's own generated form (it is stored as
--           that id), else NULL (stored as text); MB006 for a forged, malformed or empty iid
-- Locks:    none
-- Calls:    mbus.get_iid
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.check_iid(iid text, qname text)
RETURNS bigint
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    r    text[] := pg_catalog.regexp_match(iid, '^([a-z][a-z0-9_]*)\.([0-9]+)@(.*)$');
    v_n  bigint;
BEGIN
    IF iid = '' OR pg_catalog.octet_length(iid) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'an iid must be a non-empty text of at most 200 bytes';
    END IF;
    IF r IS NULL OR r[3] <> pg_catalog.current_database() THEN
        RETURN NULL;
    END IF;
    IF r[2] !~ '^[1-9][0-9]{0,17}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = pg_catalog.format('iid %L has the shape of a generated iid but not its form '
                                        '(<queue>.<n>@<database>, n without leading zeros)', iid);
    END IF;
    v_n := r[2]::bigint;
    IF v_n > coalesce(pg_catalog.pg_sequence_last_value('mbus.msg_id_seq'::pg_catalog.regclass),
                      0) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = pg_catalog.format('iid %L was not handed out by mbus.get_iid: a client iid '
                                        'of the generated shape must come from it', iid),
            HINT = 'use mbus.get_iid(queue), or an iid not of the form <queue>.<n>@<database>';
    END IF;
    RETURN CASE WHEN r[1] = qname THEN v_n END;
END;
$$;
