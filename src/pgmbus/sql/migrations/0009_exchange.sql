-- 0009 exchange: links and routes to other databases, and the iids a database has received
-- from others (issue 17, exchange between databases).
--   * mbus.exchange_link: where another database is (a conninfo: a service name from
--     pg_service.conf, or host/port/dbname/user; never a password, which belongs in the
--     mover's ~/.pgpass or PGPASSFILE, so that it is neither stored nor logged);
--   * mbus.exchange_route: a queue of this database forwarded, with an optional selector, to a
--     queue of the link's database; each route owns the durable consumer 'xr_<route>' on its
--     source queue, so a message posted after the route exists waits there until the mover
--     (`pgmbus bridge`) has committed it on the destination;
--   * mbus.exchange_received: on the receiving side, every iid accepted from another database,
--     written in the same transaction as the post, so a batch sent again after a crash of the
--     mover or of the source is recognised and skipped (exactly once across databases).

CREATE TABLE mbus.exchange_link (
    name       text PRIMARY KEY
               CHECK (name ~ '^[a-z][a-z0-9_]*$' AND octet_length(name) <= 32),
    conninfo   text NOT NULL
               CHECK (btrim(conninfo) <> ''
                      AND conninfo !~* '(^|[[:space:]])password[[:space:]]*='
                      AND conninfo !~* '^postgres(ql)?://[^/@]*:[^/@]*@'
                      AND conninfo !~* '[?&]password='),
    created_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mbus.exchange_link IS
    'Other databases this one forwards to: a conninfo without password (use ~/.pgpass or a service).';

CREATE TABLE mbus.exchange_route (
    name       text PRIMARY KEY
               CHECK (name ~ '^[a-z][a-z0-9_]*$' AND octet_length(name) <= 21),
    link       text NOT NULL REFERENCES mbus.exchange_link (name),
    src_queue  text NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    dst_queue  text NOT NULL
               CHECK (dst_queue ~ '^[a-z][a-z0-9_]*$' AND octet_length(dst_queue) <= 24),
    selector   text,
    cname      text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (cname = 'xr_' || name)
);

COMMENT ON TABLE mbus.exchange_route IS
    'Queues forwarded to a queue of a linked database through the consumer xr_<route>.';

CREATE INDEX exchange_route_link ON mbus.exchange_route (link);

CREATE TABLE mbus.exchange_received (
    iid         text PRIMARY KEY,
    source_db   text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mbus.exchange_received IS
    'iids received from other databases (same transaction as the post): a re-sent one is skipped.';

CREATE INDEX exchange_received_at ON mbus.exchange_received (received_at);
