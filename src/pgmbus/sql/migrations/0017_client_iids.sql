-- iidwin: client-given iids are remembered for a window after their post commits (issue 12 item 3,
-- the chaos suite's "stored 2x"): a producer that retries a post after an ambiguous commit (the
-- connection broke between COMMIT and its reply) with the same iid stores nothing, also when a
-- consumer already took the first message.
--   * mbus.client_iids: one row per (queue, client iid) posted within the window
--     (setting queues.iid_window, default 24 hours). post_<q> with an iid inserts its row in the
--     post's transaction (ON CONFLICT: a row younger than the window makes the post a no-op); a
--     rolled-back post leaves no row. Rows older than the window are deleted by mbus.maintain and
--     mbus.rotate_queue (mbus.expire_client_iids); posts without an iid never touch the table.

CREATE TABLE mbus.client_iids (
    qname     text        NOT NULL,
    iid       text        NOT NULL,
    posted_at timestamptz NOT NULL,
    PRIMARY KEY (qname, iid)
);

CREATE INDEX client_iids_posted_at ON mbus.client_iids (posted_at);

COMMENT ON TABLE mbus.client_iids IS
    'Client-given iids posted within queues.iid_window: a post of one of them stores nothing.';
