-- Celery on pgmbus: exchange bindings shared by every process of a Kombu transport, and a
-- result store.
--   * mbus.kombu_bindings: one row per binding of a Kombu queue to an exchange (with its
--     routing key and pattern), as Kombu's virtual transport keeps them. A publisher looks its
--     exchange up here, so a message reaches queues other processes bound: broadcast (fanout)
--     for Celery's remote control (`celery inspect`, `celery control`), a reply queue bound by
--     the client that asked, and the event queues of `celery events` and Flower (topic).
--     A queue's rows go when the queue is deleted. message_ttl is the queue's x-message-ttl
--     (seconds; Celery gives its event and remote-control queues one): messages routed to it
--     expire then, so the queue of a receiver that died does not grow.

CREATE TABLE mbus.kombu_bindings (
    exchange    text        NOT NULL,
    queue       text        NOT NULL,
    routing_key text        NOT NULL,
    pattern     text,
    message_ttl double precision CHECK (message_ttl > 0),
    bound_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (exchange, queue, routing_key)
);

CREATE INDEX kombu_bindings_queue ON mbus.kombu_bindings (queue);

COMMENT ON TABLE mbus.kombu_bindings IS
    'Kombu exchange bindings of the pgmbus:// transport, shared by its processes.';

-- Celery's results on the broker's database (result_backend = "pgmbus://...").
--   * mbus.celery_results: Celery's key-value result store: one row per task result, group
--     or chord counter, with its value as Celery encoded it. A row whose expires_at has
--     passed is not read, and is deleted by Celery's backend_cleanup task.

CREATE TABLE mbus.celery_results (
    key        text        PRIMARY KEY,
    value      bytea       NOT NULL,
    expires_at timestamptz,
    stored_at  timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX celery_results_expires_at ON mbus.celery_results (expires_at)
    WHERE expires_at IS NOT NULL;

COMMENT ON TABLE mbus.celery_results IS
    'Results of Celery tasks (the pgmbus:// result backend), with their expiry.';
