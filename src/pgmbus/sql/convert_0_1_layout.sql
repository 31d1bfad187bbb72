-- Conversion of a database made by the pre-release 0.1 layout (migrations 0001-0009, with the
-- functions defined inside them) to the baseline layout (migrations 0001-0005 holding tables
-- only, functions applied from sql/functions/). The tables, types and indexes of 0.1 at 0009
-- are exactly those of the baseline (a test compares the catalogs), so only what the baseline
-- no longer has goes; the installer then rewrites the ledger and applies the function files.
DROP FUNCTION mbus._maintain_before_spark(timestamptz);
DROP FUNCTION mbus.segment_queue(text);
DROP TABLE mbus.public_entry_point;
DELETE FROM mbus.schema_migrations;
COMMENT ON TABLE mbus.stream_cursors IS
    'Committed position of each group (and slot): see the cursor grammar in 0003_streams.sql.';
COMMENT ON COLUMN mbus.queue.ncons IS
    'Accepted for the original mbus API''s signature and kept; unused: SKIP LOCKED claims need no partitions.';
