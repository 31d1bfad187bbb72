-- queue calls do what they say or raise:
--   * mbus.to_dmq gains priority (the message's priority, read from headers.priority when not
--     given): the old signature is dropped here and made again from its function file;
--   * mbus.client_iids.consumed_in: the transaction that consumed the message posted with the
--     iid (set by consume_, consumen_, take_ and take_from_ of its queue). A post of a
--     remembered iid in that same transaction is the consumer putting back what it consumed
--     (the seed's retry: consume, then post again with the iid and delayed_until) and is
--     stored; any other post of it within queues.iid_window is a producer's retry and stores
--     nothing (with notice 01M01);
--   * mbus.dmq.unreported: the message died at max_attempts because its last delivery never
--     reported back (its lease ended without ack, nack or bury: an ack lost while the database
--     was down, a worker killed), not because a handler failed; mbus.queue_stats (and the
--     view mbus.queue_metrics over it) gains dmq_unreported, so both are dropped here and made
--     again from their function files.

DROP FUNCTION IF EXISTS mbus.to_dmq(mbus.qt_model, text, text, text);

ALTER TABLE mbus.client_iids ADD COLUMN consumed_in xid8;

COMMENT ON COLUMN mbus.client_iids.consumed_in IS
    'The transaction that consumed the message posted with the iid: its own re-post is stored.';

ALTER TABLE mbus.dmq ADD COLUMN unreported boolean NOT NULL DEFAULT false;

COMMENT ON COLUMN mbus.dmq.unreported IS
    'Died at max_attempts with its last delivery never reported (lease ended without ack/nack).';

DROP VIEW IF EXISTS mbus.queue_metrics;

DROP FUNCTION IF EXISTS mbus.queue_stats(text, timestamptz);
