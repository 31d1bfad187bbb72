-- Queries of the timers engine (pgmbus.timers): thin calls of the mbus.timer_* SQL API.

-- name: add_client
SELECT client_id, api_key, signing_secret FROM mbus.timer_add_client(%(name)s);

-- name: authenticate
SELECT mbus.timer_authenticate(%(api_key)s);

-- name: create_many
SELECT ord, created, callback FROM mbus.timer_create_many(%(items)s, %(now)s);

-- name: get
SELECT mbus.timer_get(%(client_id)s, %(group_key)s, %(event_key)s);

-- name: list
SELECT mbus.timer_list(%(client_id)s, %(group_key)s, %(status)s, %(limit)s, %(after)s);

-- name: update
SELECT mbus.timer_update(%(client_id)s, %(group_key)s, %(event_key)s, %(run_at)s,
                         %(originally_run_at)s, %(url)s, %(context)s, %(i_ensure_pending)s,
                         %(now)s);

-- name: cancel
SELECT mbus.timer_cancel(%(client_id)s, %(group_key)s, %(event_key)s, %(now)s);

-- name: delete
SELECT mbus.timer_delete(%(client_id)s, %(group_key)s, %(event_key)s, %(force)s, %(now)s);

-- name: history
SELECT mbus.timer_history(%(client_id)s, %(group_key)s, %(event_key)s);

-- name: heartbeat
SELECT mbus.timer_heartbeat(%(dispatcher)s, %(lease_s)s, %(now)s);

-- name: release
SELECT mbus.timer_release(%(dispatcher)s);

-- name: claim
SELECT id, attempt, webhook_id, client_id, group_key, event_key, run_at, originally_run_at,
       url, context, fast_retries, signing_secret, claimed_until
FROM mbus.timer_claim(%(dispatcher)s, %(buckets)s, %(limit)s, %(lease_s)s, %(now)s,
                      %(lookahead_s)s, %(after_run_at)s, %(after_id)s, %(skip_clients)s);

-- name: unclaim
SELECT mbus.timer_unclaim(%(dispatcher)s, %(ids)s, %(attempts)s);

-- name: record
SELECT mbus.timer_record(%(results)s, %(now)s);

-- name: schedule_create
SELECT created, schedule FROM mbus.timer_schedule_create(
    p_client_id => %(client_id)s, p_schedule_key => %(schedule_key)s, p_url => %(url)s,
    p_cron => %(cron)s, p_timezone => %(timezone)s, p_interval_s => %(interval_s)s,
    p_group_key => %(group_key)s, p_context => %(context)s, p_retry => %(retry)s,
    p_stop_after_delay_s => %(stop_after_delay_s)s, p_start_at => %(start_at)s,
    p_end_at => %(end_at)s, p_now => %(now)s, p_queue => %(queue)s);

-- name: schedule_list
SELECT mbus.timer_schedule_list(%(client_id)s);

-- name: schedule_set_paused
SELECT mbus.timer_schedule_set_paused(%(client_id)s, %(schedule_key)s, %(paused)s, %(now)s);

-- name: schedule_delete
SELECT mbus.timer_schedule_delete(%(client_id)s, %(schedule_key)s, %(now)s);

-- name: schedules_due
SELECT id, cron, timezone, interval_s, start_at, end_at, generated_until, stop_after_delay_s
FROM mbus.timer_schedules_due(%(horizon_s)s, %(limit)s, %(now)s);

-- name: schedule_materialize
SELECT mbus.timer_schedule_materialize(%(schedule_id)s, %(run_ats)s, %(until)s, %(now)s);

-- name: clean
SELECT callbacks, changes FROM mbus.timer_clean(%(ttl_days)s, %(now)s);

-- name: clean_if_due
SELECT mbus.timer_clean_if_due(%(ttl_days)s, %(every_s)s, %(now)s);

-- name: now
SELECT now();

-- name: ping
SELECT 1;

-- name: listen_changes
LISTEN mbus_timer_changed;

-- name: schedule_pause_broken
SELECT mbus.timer_schedule_pause_broken(%(schedule_id)s, %(reason)s, %(now)s);
