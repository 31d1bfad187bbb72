-- streams: events sent directly to one subscription, and future-dated events (issue 17, the PGMB
-- seed rows).
--   * mbus.events.subscription_id: an event published for one subscription is read only by the
--     group that owns that subscription (mbus._batch filters it out for every other group,
--     read_between and spark_read leave it out unless asked for that subscription), and
--     read_subscriptions hands it to that subscription only, whatever the conditions say.
--   * mbus.stream_scheduled: an event published with delayed_until in the future waits here, its id
--     already taken from mbus.event_seq, and mbus.release_scheduled moves it into the log once
--     its time has come, in a transaction of its own. It thus enters the log as a new
--     transaction: every group's snapshot cursor sees it as not yet consumed (never skipped),
--     and it holds nothing back while it waits (it is not in the log, so it blocks no cursor).
--   * mbus.subscription_queues: subscriptions that route their events into a queue (issue 16):
--     mbus.move_routed reads the subscription's group and posts each matched event to the
--     queue in the transaction that moves the group's cursor, so each event is posted exactly
--     once. Dropping the queue or the subscription drops the route.
--   * mbus._batch gains the group (to filter directed events), mbus.publish and publish_batch
--     gain the named parameters subscription_id and delayed_until, mbus.spark_read the parameter
--     p_subscription: their old signatures are dropped here and made again by their function
--     files.

ALTER TABLE mbus.events ADD COLUMN subscription_id bigint;

COMMENT ON COLUMN mbus.events.subscription_id IS
    'The one subscription this event was sent to (NULL: every group and subscription it matches).';

-- read_subscriptions looks the directed events of a batch up here; it is empty when no event
-- is ever directed, so the look-up then costs nothing.
CREATE INDEX events_directed ON mbus.events (id) WHERE subscription_id IS NOT NULL;

CREATE TABLE mbus.stream_scheduled (
    id              bigint      PRIMARY KEY,
    delayed_until      timestamptz NOT NULL,
    topic           text        NOT NULL,
    key             text,
    payload         jsonb       NOT NULL,
    headers         jsonb,
    subscription_id bigint,
    created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT stream_scheduled_topic_ok CHECK (topic <> '' AND octet_length(topic) <= 200),
    CONSTRAINT stream_scheduled_headers_ok
        CHECK (headers IS NULL OR jsonb_typeof(headers) = 'object'),
    CONSTRAINT stream_scheduled_finite CHECK (isfinite(delayed_until))
);

COMMENT ON TABLE mbus.stream_scheduled IS
    'Future-dated events (id reserved from mbus.event_seq) until release_scheduled logs them.';

CREATE INDEX stream_scheduled_due ON mbus.stream_scheduled (delayed_until, id);

CREATE TABLE mbus.subscription_queues (
    subscription_id bigint      NOT NULL REFERENCES mbus.subscriptions ON DELETE CASCADE,
    qname           text        NOT NULL REFERENCES mbus.queue (qname) ON DELETE CASCADE,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (subscription_id, qname)
);

COMMENT ON TABLE mbus.subscription_queues IS
    'Routes: the events a subscription matches are posted to the queue by mbus.move_routed.';

CREATE INDEX subscription_queues_qname ON mbus.subscription_queues (qname);

DROP FUNCTION IF EXISTS mbus.publish(text, jsonb, text, jsonb);
DROP FUNCTION IF EXISTS mbus.publish_batch(text, jsonb[], text[], jsonb[]);
DROP FUNCTION IF EXISTS mbus._batch(xid8[], xid8, bigint, xid8, xid8, pg_snapshot, text[],
                                    integer, integer, integer);
DROP FUNCTION IF EXISTS mbus.spark_read(text, text, text[], integer, integer, text[], bigint,
                                        bigint, timestamptz, timestamptz, timestamptz,
                                        timestamptz);
