-- streams wake-ups (issue 14): publishing notifies only while a reader waits.
--   A NOTIFY takes a cluster-wide lock from pre-commit to the end of the commit, so transactions
--   that notify commit one at a time and group commit is lost: notifying on every publishing
--   transaction halved the rate of 4 publishers with synchronous_commit on. A reader about to
--   sleep registers here (mbus.await_events: LISTEN mbus_events and a row for its session),
--   then looks at the log once more before it sleeps; it unregisters (mbus.await_events_done)
--   when it has events to read. publish, publish_batch, notify and the capture triggers notify
--   only while the table has a row, so a log whose readers keep up without sleeping sends no
--   notifications at all. The table is unlogged: registering writes no WAL and waits for no
--   disk flush, and a crash empties it (its sessions are gone too).

CREATE UNLOGGED TABLE mbus.stream_waiter (
    pid   integer     PRIMARY KEY,
    since timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE mbus.stream_waiter IS
    'Sessions waiting for events (LISTEN mbus_events); publishing notifies only while one waits.';
