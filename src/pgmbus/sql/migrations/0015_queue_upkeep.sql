-- qperf: storage upkeep that does not depend on the client (issue 14).
--   * mbus.queue_segment.upkept_at: when mbus.rotate_queue last ran for the queue;
--     upkeep_every: how often the claims run it (NULL: never, only the callers of rotate_queue).
--     Claims (consume, consumen, lease) read both with the segment row they read anyway; once
--     upkept_at is upkeep_every old and the claim is the first statement of its own transaction,
--     the claim runs mbus.rotate_queue(q, 1) first, so SQL-only consumers keep the segments
--     rotating and truncated without anyone calling rotate_queue.
--   * cur_base_bytes: a claim that is not surely alone in its transaction rotates without
--     truncating, into a drained segment when none is empty; the segment's size then is its
--     base, so that rotation waits for rotate_bytes of new growth (not the next second).

ALTER TABLE mbus.queue_segment
    ADD COLUMN upkept_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN upkeep_every interval DEFAULT '1 second' CHECK (upkeep_every > '0'::interval),
    ADD COLUMN cur_base_bytes bigint NOT NULL DEFAULT 0;

COMMENT ON COLUMN mbus.queue_segment.upkept_at IS
    'When rotate_queue last ran for the queue (claims run it once this is upkeep_every old).';

COMMENT ON COLUMN mbus.queue_segment.upkeep_every IS
    'How often claims run rotate_queue in their own transaction; NULL: only its other callers.';

COMMENT ON COLUMN mbus.queue_segment.cur_base_bytes IS
    'Size of the current segment when it became current (a drained one reused untruncated); '
    'rotate_queue rotates once it grew rotate_bytes beyond this.';
