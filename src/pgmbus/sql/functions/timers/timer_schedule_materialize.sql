-- Function: mbus.timer_schedule_materialize(p_schedule_id, p_run_ats, p_until, p_now)
--
-- Purpose:  Create a schedule's callbacks for the occurrence times the scheduler computed (or
--           post one message per occurrence to its queue) and move generated_until to p_until
--           (never back); occurrences before generated_until, at or after p_until or end_at are
--           ignored. Event key '<schedule_key>@<UTC YYYY-MM-DDTHH24:MI:SSZ>', created idempotently
--           (never twice, even by two schedulers). A queue occurrence is posted (delayed_until =
--           its time, iid 'schedule:<id>:<UTC time>') and recorded in mbus.timer_schedule_posts
--           in the same transaction, never posted twice. A dropped queue raises MB006 (the
--           scheduler pauses it); a paused schedule gets nothing.
-- Params:   p_schedule_id  the schedule's id (bigint)
--           p_run_ats      the occurrence times (timestamptz[])
--           p_until        the end of the period the scheduler covered (exclusive)
--           p_now          the clock (NULL = now()): the callbacks' created_at
-- Returns:  integer: the number of callbacks created or messages posted; MB002 when there is
--           no such schedule; MB006 when its queue does not exist
-- Locks:    row lock FOR UPDATE of the schedule (the scheduler already holds it from
--           mbus.timer_schedules_due), then UPDATE; those of mbus.timer_create_many, or of
--           mbus.post and inserts into mbus.timer_schedule_posts; held to commit
-- Calls:    mbus.given_clock, mbus.post, mbus.require_queue, mbus.timer_create_many
-- Tables:   mbus.timer_schedule_posts, mbus.timer_schedules
CREATE OR REPLACE FUNCTION mbus.timer_schedule_materialize(p_schedule_id bigint, p_run_ats timestamptz[],
    p_until timestamptz, p_now timestamptz DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    s mbus.timer_schedules;
    v_count integer := 0;
    v_run_at timestamptz;
    v_iid text;
BEGIN
    SELECT * INTO s FROM mbus.timer_schedules AS t WHERE t.id = p_schedule_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no schedule with id %s', p_schedule_id);
    END IF;
    IF s.paused THEN
        RETURN 0;
    END IF;
    IF s.queue IS NOT NULL THEN
        BEGIN
            PERFORM mbus.require_queue(s.queue);
        EXCEPTION WHEN SQLSTATE 'MB001' OR SQLSTATE 'MB002' THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('queue %s does not exist', s.queue);
        END;
        FOR v_run_at, v_iid IN
            INSERT INTO mbus.timer_schedule_posts AS p (schedule_id, run_at, iid, posted_at)
            SELECT DISTINCT s.id, r,
                   'schedule:' || s.id || ':'
                   || to_char(r AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
                   coalesce(mbus.given_clock(p_now), now())
            FROM unnest(p_run_ats) AS r
            WHERE r >= s.generated_until AND r < p_until AND (s.end_at IS NULL OR r < s.end_at)
            ORDER BY r
            ON CONFLICT (schedule_id, run_at) DO NOTHING
            RETURNING p.run_at, p.iid
        LOOP
            PERFORM mbus.post(s.queue,
                              jsonb_build_object('schedule_key', s.schedule_key,
                                                 'run_at', v_run_at, 'context', s.context),
                              NULL, NULL, v_run_at, NULL, v_iid);
            v_count := v_count + 1;
        END LOOP;
        UPDATE mbus.timer_schedules AS t
        SET generated_until = greatest(t.generated_until, p_until)
        WHERE t.id = s.id;
        RETURN v_count;
    END IF;
    SELECT count(*) FILTER (WHERE m.created) INTO v_count
    FROM mbus.timer_create_many(
        coalesce((SELECT jsonb_agg(jsonb_build_object(
                    'client_id', s.client_id, 'group_key', s.group_key,
                    'event_key', s.schedule_key || '@'
                                 || to_char(r AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                    'run_at', r, 'url', s.url, 'context', s.context, 'retry', s.retry,
                    'stop_after_delay_s', s.stop_after_delay_s, 'schedule_id', s.id)
                    ORDER BY r)
                  FROM unnest(p_run_ats) AS r
                  WHERE r >= s.generated_until AND r < p_until
                    AND (s.end_at IS NULL OR r < s.end_at)), '[]'),
        p_now) AS m;
    UPDATE mbus.timer_schedules AS t
    SET generated_until = greatest(t.generated_until, p_until)
    WHERE t.id = s.id;
    RETURN v_count;
END;
$$;
