-- Function: mbus.create_queue(qname, ncons, is_roles_security_model)
--
-- Purpose:  Create a queue: its row in mbus.queue, the delivery table mbus.q_<qname> with its
--           segments (mbus.create_segments), its consumer 'default', the dependency trigger and
--           roles (mbus.queue_created) and its generated functions (mbus.regenerate_queue). The
--           names it would make must be free (mbus.name_clash). For an existing queue it updates
--           ncons and regenerates the functions when is_roles_security_model is what the queue
--           has, and refuses (MB003) otherwise: drop and create the queue to change the model. A
--           live temporary queue's name is refused (MB003): its session's end would drop it.
-- Params:   qname                    the queue's name (text; the name rule, at most 24 bytes)
--           ncons                    the original API's part count (integer >= 1; stored, unused)
--           is_roles_security_model  post/consume only through the queue's roles (boolean)
-- Returns:  void; MB001 for a bad name, MB006 for ncons < 1, MB003 when a generated name is
--           taken, the queue exists with the other security model, or it is a temporary queue
-- Locks:    pg_advisory_xact_lock(1835165041) (serializes every catalog change of queues:
--           create/drop of queues, consumers, triggers, clear_tempq); CREATE TABLE of the new
--           tables and indexes; ensure_role's CREATE ROLE; for an existing queue, a row lock on its
--           mbus.queue row
-- Calls:    mbus.check_name, mbus.create_segments, mbus.generated_name, mbus.name_clash,
--           mbus.queue_created, mbus.regenerate_queue, mbus.segment_of
-- Tables:   mbus.consumer, mbus.queue, mbus.temp_object
-- Design:   docs/DESIGN.md#decisions-and-the-figures-behind-them
CREATE OR REPLACE FUNCTION mbus.create_queue(qname text, ncons integer DEFAULT 1,
                                             is_roles_security_model boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    tbl     text := mbus.generated_name('relation', 'table', qname);
    v_clash text;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    IF ncons IS NULL OR ncons < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'ncons must be a positive integer';
    END IF;
    -- Serialize catalog changes of queues (create/drop/consumers/triggers).
    PERFORM pg_advisory_xact_lock(1835165041);
    IF EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = create_queue.qname) THEN
        IF EXISTS (SELECT 1 FROM mbus.temp_object AS t
                   WHERE t.kind = 'queue' AND t.qname = create_queue.qname) THEN
            -- "create" must not hand out a queue that its session's end will drop
            RAISE EXCEPTION USING ERRCODE = 'MB003',
                MESSAGE = format('queue %s is a temporary queue of session %s: it is dropped '
                                 'when that session ends; choose another name', qname,
                                 (SELECT t.pid FROM mbus.temp_object AS t
                                  WHERE t.kind = 'queue' AND t.qname = create_queue.qname
                                  LIMIT 1));
        END IF;
        IF (SELECT q.roles_security FROM mbus.queue AS q WHERE q.qname = create_queue.qname)
           IS DISTINCT FROM coalesce(is_roles_security_model, false) THEN
            RAISE EXCEPTION USING ERRCODE = 'MB003',
                MESSAGE = format('queue %s exists with is_roles_security_model = %s; drop it and '
                                 'create it again to change the security model', qname,
                                 NOT coalesce(is_roles_security_model, false));
        END IF;
        UPDATE mbus.queue AS q SET ncons = create_queue.ncons WHERE q.qname = create_queue.qname;
        PERFORM mbus.regenerate_queue(qname);
        RETURN;
    END IF;
    v_clash := mbus.name_clash(qname);
    IF v_clash IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB003', MESSAGE = v_clash;
    END IF;
    INSERT INTO mbus.queue (qname, ncons, roles_security)
    VALUES (qname, ncons, coalesce(is_roles_security_model, false));
    EXECUTE format($t$
CREATE TABLE mbus.%I (
    c             integer NOT NULL,
    vt            timestamptz NOT NULL,
    id            bigint NOT NULL,
    iid           text,
    added         timestamptz NOT NULL,
    delayed_until timestamptz,
    expires       timestamptz,
    headers       jsonb,
    properties    jsonb,
    data          jsonb NOT NULL,
    consume_after text[],
    attempts      integer NOT NULL DEFAULT 0,
    lease_token   uuid,
    waited        boolean NOT NULL DEFAULT false,
    priority      smallint NOT NULL DEFAULT 0,
    seg           smallint NOT NULL DEFAULT mbus.segment_of(%L)
) PARTITION BY LIST (seg)$t$, tbl, qname);
    EXECUTE format('COMMENT ON TABLE mbus.%I IS %L', tbl,
                   format('deliveries of queue %s: one row per (message, consumer)', qname));
    PERFORM mbus.create_segments(qname);
    INSERT INTO mbus.consumer (qname, cname, selector) VALUES (qname, 'default', NULL);
    PERFORM mbus.queue_created(qname);
    PERFORM mbus.regenerate_queue(qname);
END;
$$;
