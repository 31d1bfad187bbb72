-- Function: mbus.create_queue(qname, ncons, is_roles_security_model)
--
-- Purpose:  create_queue(qname, ncons, is_roles_security_model): as in 0002, with a segmented table.
-- Params:   qname text FILL
--           ncons integer DEFAULT 1 FILL
--           is_roles_security_model boolean DEFAULT false FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.create_queue(qname text, ncons integer DEFAULT 1,
                                             is_roles_security_model boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    tbl text := 'q_' || qname;
BEGIN
    PERFORM mbus.check_name('queue', qname, 24);
    IF ncons IS NULL OR ncons < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'ncons must be a positive integer';
    END IF;
    -- Serialize catalog changes of queues (create/drop/consumers/triggers).
    PERFORM pg_advisory_xact_lock(1835165041);
    IF EXISTS (SELECT 1 FROM mbus.queue AS q WHERE q.qname = create_queue.qname) THEN
        UPDATE mbus.queue AS q SET ncons = create_queue.ncons WHERE q.qname = create_queue.qname;
        PERFORM mbus.regenerate_queue(qname);
        RETURN;
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
