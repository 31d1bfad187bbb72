-- take 1 job then finish it: procrastinate's own "fetch_job" and "finish_job" queries
-- (procrastinate 3.10, procrastinate/sql/queries.sql, as run by its Worker through
-- JobManager.fetch_job and JobManager.finish_job; default delete_jobs "never", so a finished
-- job is kept with status 'succeeded').
SELECT id, status, task_name, priority, lock, queueing_lock, args, scheduled_at, queue_name, attempts, worker_id
    FROM procrastinate_fetch_job_v2(ARRAY['bench']::varchar[], :procrastinate_worker) \gset got_
SELECT procrastinate_finish_job_v1(:got_id, 'succeeded', false);
