-- 0008 timer queue targets (issue 16): a schedule's target is a URL (each occurrence is an HTTP
-- callback, as before) or a queue (each occurrence posts one message to it).
--   * mbus.timer_schedules.queue: the target queue; url becomes NULL for such a schedule, and a
--     schedule has exactly one of them;
--   * mbus.timer_schedule_posts: one row per occurrence posted to a queue, written in the
--     transaction of the post, so an occurrence is posted once even when a scheduler re-runs;
--   * mbus.timer_schedule_create gains p_queue: its old signature is dropped here (the function
--     file creates the new one), so calls by name stay unambiguous.

ALTER TABLE mbus.timer_schedules ALTER COLUMN url DROP NOT NULL;
ALTER TABLE mbus.timer_schedules ADD COLUMN queue text;
ALTER TABLE mbus.timer_schedules
    ADD CONSTRAINT timer_schedules_one_target CHECK ((url IS NULL) <> (queue IS NULL));
COMMENT ON COLUMN mbus.timer_schedules.queue IS
    'The queue each occurrence posts one message to (NULL for a schedule calling url).';

CREATE TABLE mbus.timer_schedule_posts (
    schedule_id bigint      NOT NULL REFERENCES mbus.timer_schedules ON DELETE CASCADE,
    run_at      timestamptz NOT NULL,
    iid         text        NOT NULL,
    posted_at   timestamptz NOT NULL,
    PRIMARY KEY (schedule_id, run_at)
);
COMMENT ON TABLE mbus.timer_schedule_posts IS
    'The occurrences of queue-target schedules already posted (by mbus.timer_schedule_materialize, '
    'in the transaction of the post), with the iid of their message: never posted twice.';

DROP FUNCTION IF EXISTS mbus.timer_schedule_create(bigint, text, text, text, text, integer, text,
    jsonb, jsonb, double precision, timestamptz, timestamptz, timestamptz);
