-- queue features (issue 16 queue features, issue 15 counters, issue 17 consume_after):
--   * mbus.queue_pause: paused queues (cname '') and consumers; claims of a paused one return
--     nothing, posts are still accepted (mbus.pause_queue / mbus.resume_queue);
--   * mbus.queue_dedupe: the message last posted with a dedupe key, per queue and key; post_<q>
--     returns its iid instead of posting while one of its deliveries is pending;
--   * post_<q> and mbus.post gain the named parameters dedupe_key and consume_after: the old
--     signatures are dropped here (CREATE OR REPLACE cannot change an argument list, and an
--     overload with more defaulted parameters would make every short call ambiguous); the
--     installer makes the new ones (function files, then regenerate_queue for every queue);
--   * mbus.queue_stats gains posted and consumed: it and the view over it are dropped here and
--     made again by their function files. The counters themselves are sequences made by
--     mbus.regenerate_queue (q_<q>$posted, q_<q>$c<cid>$posted, q_<q>$c<cid>$consumed).

CREATE TABLE mbus.queue_pause (
    qname     text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    cname     text NOT NULL DEFAULT '',
    paused_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (qname, cname)
);

COMMENT ON TABLE mbus.queue_pause IS
    'Paused queues (cname = '''') and consumers: not claimed from; posts are still accepted.';

CREATE TABLE mbus.queue_dedupe (
    qname     text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    dkey      text NOT NULL CHECK (dkey <> '' AND octet_length(dkey) <= 200),
    id        bigint NOT NULL,
    iid       text NOT NULL,
    posted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (qname, dkey)
);

COMMENT ON TABLE mbus.queue_dedupe IS
    'The message last posted with a dedupe key; a post with that key returns its iid while the '
    'message is pending. mbus.dedupe_clean drops rows whose message is gone.';

DO $$
DECLARE
    v_fn regprocedure;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure FROM pg_proc AS p JOIN mbus.queue AS q
            ON p.proname = 'post_' || q.qname
        WHERE p.pronamespace = 'mbus'::regnamespace
    LOOP
        EXECUTE format('DROP FUNCTION %s', v_fn);
    END LOOP;
END;
$$;

DROP FUNCTION IF EXISTS mbus.post(text, jsonb, jsonb, jsonb, timestamptz, timestamptz, text);

DROP VIEW IF EXISTS mbus.queue_metrics;

DROP FUNCTION IF EXISTS mbus.queue_stats(text, timestamptz);
