-- post 1 job per transaction: procrastinate's own "defer_jobs" query (procrastinate 3.10,
-- procrastinate/sql/queries.sql, block "defer_jobs", as run by JobManager.batch_defer_jobs);
-- the job array, a parameter there, is built here from the payload.
SELECT unnest(
  procrastinate_defer_jobs_v1(
    ARRAY[ROW('bench', 'bench_task', 0, NULL, NULL, :payload::jsonb, NULL)]::procrastinate_job_to_defer_v1[]
  )
) AS id;
