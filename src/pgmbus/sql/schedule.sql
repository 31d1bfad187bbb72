-- Storage upkeep from pg_cron (pgmbus.schedule, `pgmbus install --schedule`).

-- name: cron_setup
-- On the target database: its name, whether the server preloads pg_cron, the database pg_cron
-- keeps its jobs in, and whether the extension is available at all.
SELECT current_database(),
       'pg_cron' = ANY (string_to_array(replace(current_setting('shared_preload_libraries'),
                                                ' ', ''), ',')),
       coalesce(current_setting('cron.database_name', true), 'postgres'),
       EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_cron')

-- name: cron_installed
SELECT 1 FROM pg_extension WHERE extname = 'pg_cron'

-- name: cron_extension
CREATE EXTENSION IF NOT EXISTS pg_cron

-- name: cron_schedule
-- Named: scheduling again replaces the job's schedule and command (one job per database).
SELECT cron.schedule_in_database(%(job)s, %(every)s, %(command)s, %(database)s)

-- name: cron_job
SELECT jobid, schedule, command, database, active FROM cron.job WHERE jobname = %(job)s

-- name: cron_unschedule
SELECT cron.unschedule(jobid) FROM cron.job WHERE jobname = %(job)s
