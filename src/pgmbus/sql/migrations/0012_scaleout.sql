-- 0011 scale-out: the placement map of a bus spread over several PostgreSQL servers (issue 17,
-- scale-out). It lives on one "home" database; pgmbus.scaleout.Cluster reads it.
--   * mbus.placement_server: the servers of the bus (a conninfo without password, as links);
--   * mbus.placement: where each queue or topic lives. A queue lives on one server; a topic on
--     one or several, a message going to servers[1 + crc32(key) % cardinality(servers)]. A
--     queue being moved has moving_to set: posts go there while the old server is drained
--     through a transfer (pgmbus.scaleout.move), then the move is finished;
--   * mbus.move_received: on the server a queue moves to, the iids a move (move_id) has posted
--     there, in the same transaction as the post, so a batch sent again after a crash of the
--     mover is skipped (exactly once), and a later move of the same message is not confused
--     with this one (unlike mbus.exchange_received, a move may bring a message back).

CREATE TABLE mbus.placement_server (
    name       text PRIMARY KEY
               CHECK (name ~ '^[a-z][a-z0-9_]*$' AND octet_length(name) <= 32),
    conninfo   text NOT NULL
               CHECK (btrim(conninfo) <> ''
                      AND conninfo !~* '(^|[[:space:]])password[[:space:]]*='
                      AND conninfo !~* '^postgres(ql)?://[^/@]*:[^/@]*@'
                      AND conninfo !~* '[?&]password='),
    created_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mbus.placement_server IS
    'Servers of a bus spread over several PostgreSQL servers (conninfo without password).';

CREATE TABLE mbus.placement (
    kind      text NOT NULL CHECK (kind IN ('queue', 'topic')),
    name      text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]*$' AND octet_length(name) <= 63),
    servers   text[] NOT NULL
              CHECK (cardinality(servers) >= 1 AND (kind = 'topic' OR cardinality(servers) = 1)),
    moving_to text REFERENCES mbus.placement_server (name),
    move_id   text,
    placed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, name),
    CHECK (moving_to IS NULL OR kind = 'queue'),
    CHECK ((moving_to IS NULL) = (move_id IS NULL))
);

COMMENT ON TABLE mbus.placement IS
    'Where each queue (one server) or topic (servers by key hash) of the bus lives.';

CREATE TABLE mbus.move_received (
    move_id     text NOT NULL,
    iid         text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (move_id, iid)
);

COMMENT ON TABLE mbus.move_received IS
    'iids a queue move has posted here (same transaction as the post): a re-sent one is skipped.';

-- Topic routes (issue 17, exchange): a topic of this database (optionally only the keys in
-- [key_lo, key_hi)) forwarded to a topic of the link's database by `pgmbus bridge`. Each route
-- owns the stream consumer group 'xt_<route>' (reading its source topic from the route's
-- creation on); the group's position is committed in the source transaction that the mover
-- commits only after the destination has committed the batch. Events carry no iid: the
-- exchange names an event '<source_db>:<id>' (headers.eid, kept on later hops) and the
-- destination records it in mbus.exchange_received, as it does the iids of queue routes.
CREATE TABLE mbus.exchange_topic_route (
    name       text PRIMARY KEY
               CHECK (name ~ '^[a-z][a-z0-9_]*$' AND octet_length(name) <= 45),
    link       text NOT NULL REFERENCES mbus.exchange_link (name),
    src_topic  text NOT NULL CHECK (src_topic <> '' AND octet_length(src_topic) <= 200),
    dst_topic  text NOT NULL CHECK (dst_topic <> '' AND octet_length(dst_topic) <= 200),
    key_lo     text,
    key_hi     text,
    grp        text NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK (grp = 'xt_' || name),
    CHECK (key_lo IS NULL OR key_hi IS NULL OR key_lo < key_hi)
);

COMMENT ON TABLE mbus.exchange_topic_route IS
    'Topics forwarded (optionally a key range) to a topic of a linked database through group xt_<route>.';

CREATE INDEX exchange_topic_route_link ON mbus.exchange_topic_route (link);
