-- queue calls do what they say or raise:
--   * mbus.to_dmq gains priority (the message's priority, read from headers.priority when not
--     given): the old signature is dropped here and made again from its function file;
--   * mbus.client_iids.consumed_in: the transaction that consumed the message posted with the
--     iid (set by consume_, consumen_, take_ and take_from_ of its queue). A post of a
--     remembered iid in that same transaction is the consumer putting back what it consumed
--     (the seed's retry: consume, then post again with the iid and delayed_until) and is
--     stored; any other post of it within queues.iid_window is a producer's retry and stores
--     nothing (with notice MB010).

DROP FUNCTION IF EXISTS mbus.to_dmq(mbus.qt_model, text, text, text);

ALTER TABLE mbus.client_iids ADD COLUMN consumed_in xid8;

COMMENT ON COLUMN mbus.client_iids.consumed_in IS
    'The transaction that consumed the message posted with the iid: its own re-post is stored.';
