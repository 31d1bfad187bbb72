-- post 100 jobs per call: procrastinate's own "defer_jobs" query (procrastinate 3.10,
-- procrastinate/sql/queries.sql, block "defer_jobs", JobManager.batch_defer_jobs); the job
-- array, a parameter there, is built here.
SELECT unnest(
  procrastinate_defer_jobs_v1(
    array_fill(ROW('bench', 'bench_task', 0, NULL, NULL, :payload::jsonb, NULL)::procrastinate_job_to_defer_v1, ARRAY[100])
  )
) AS id;
