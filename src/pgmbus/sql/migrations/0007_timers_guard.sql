-- 0007 timers guard (issue 12, items 11-13): what the bounds and limits of the timer functions
-- need in the tables.
--   * mbus.timer_schedules.paused_reason: why the scheduler paused a schedule (its next run
--     could not be computed or created: mbus.timer_schedule_pause_broken); cleared on resume;
--   * the settings timers.max_context_bytes (65536) and timers.max_url_length (4096), the size
--     limits of stored timer fields, read by mbus.timer_limits (the HTTP service has its own,
--     ServiceConfig.max_context_bytes / max_url_length: raise both).

ALTER TABLE mbus.timer_schedules ADD COLUMN paused_reason text;
COMMENT ON COLUMN mbus.timer_schedules.paused_reason IS
    'Why the scheduler paused the schedule (its next run could not be computed or created); '
    'NULL when running or paused by its client.';

INSERT INTO mbus.settings (key, value, description) VALUES
    ('timers.max_context_bytes', '65536',
     'largest context of a timer callback or schedule, in bytes of its JSON text'),
    ('timers.max_url_length', '4096', 'longest URL of a timer callback or schedule, in bytes');
