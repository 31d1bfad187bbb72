-- Function: mbus.dedupe_record(qname, dedupe_key, id, iid)
--
-- Purpose:  Record the message a post with a dedupe key makes (after mbus.dedupe_lock found no
--           pending one): the key now names this message. Rolled back with the post.
--           PL/pgSQL: an SQL function with SET is never inlined and was planned again in every
--           posting transaction; PL/pgSQL keeps the INSERT's plan for the session.
-- Params:   qname       the queue's name (text)
--           dedupe_key  the key (text)
--           id          the message's id (bigint; its deliveries' q_<qname>.id)
--           iid         the message's iid (text)
-- Returns:  void
-- Locks:    the key's row of mbus.queue_dedupe (INSERT ... ON CONFLICT DO UPDATE)
-- Calls:    none
-- Tables:   mbus.queue_dedupe
CREATE OR REPLACE FUNCTION mbus.dedupe_record(qname text, dedupe_key text, id bigint, iid text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
#variable_conflict use_column
BEGIN
    INSERT INTO mbus.queue_dedupe AS d (qname, dkey, id, iid)
    VALUES (dedupe_record.qname, dedupe_record.dedupe_key, dedupe_record.id, dedupe_record.iid)
    ON CONFLICT (qname, dkey) DO UPDATE
    SET id = excluded.id, iid = excluded.iid, posted_at = now();
END;
$$;
