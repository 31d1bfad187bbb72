-- take 1 job then acknowledge it: PgQueuer's own statements, copied from pgqueuer 1.6.0
-- (pgqueuer/adapters/persistence/qb.py): QueryQueueBuilder.build_dequeue_query rendered for
-- one entrypoint without concurrency limits (as QueueManager runs it through
-- Queries.dequeue), then QueryQueueBuilder.build_log_job_query (Queries.log_jobs: the
-- acknowledgement, which deletes the job and logs 'successful'). Their $n parameters are
-- pgbench variables here (:batch, :pq_entrypoints, :pq_qm, :pq_heartbeat, the claimed ids).
\set batch 1
WITH
-- No entrypoint carries a concurrency limit; all are available.
available AS (
    SELECT UNNEST(:pq_entrypoints::text[]) AS entrypoint
),

-- New queued jobs; LATERAL hits the (entrypoint, priority, id) index.
next_queued AS (
    SELECT job.id, job.priority
    FROM available
    CROSS JOIN LATERAL (
        SELECT candidate.id, candidate.priority
        FROM pgqueuer candidate
        WHERE candidate.entrypoint = available.entrypoint
          AND candidate.status = 'queued'
          AND candidate.execute_after < NOW()
        ORDER BY candidate.priority DESC, candidate.id ASC
        LIMIT :batch
        FOR UPDATE SKIP LOCKED
    ) job
    ORDER BY job.priority DESC, job.id ASC
    LIMIT :batch
),

-- Stale picked jobs whose heartbeat timed out.
next_stale AS (
    SELECT stale.id, stale.priority
    FROM pgqueuer stale
    WHERE stale.status = 'picked'
      AND stale.entrypoint = ANY(:pq_entrypoints::text[])
      AND stale.heartbeat < NOW() - :pq_heartbeat::interval
      AND stale.execute_after < NOW()
    ORDER BY stale.priority DESC, stale.id ASC
    FOR UPDATE SKIP LOCKED
    LIMIT :batch
),

-- Merge both sets into one priority order so stale competes with fresh.
eligible AS (
    SELECT id FROM (
        SELECT id, priority FROM next_queued
        UNION ALL
        SELECT id, priority FROM next_stale
    ) combined
    ORDER BY priority DESC, id ASC
    LIMIT :batch
),

-- Claim every eligible job in one atomic UPDATE.
claimed AS (
    UPDATE pgqueuer
    SET status = 'picked',
        updated   = NOW(),
        heartbeat = NOW(),
        queue_manager_id = :pq_qm::uuid
    WHERE id IN (SELECT id FROM eligible)
    RETURNING *
),

-- Record the pick in the log table.
log_pick AS (
    INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority)
    SELECT id, status, entrypoint, priority FROM claimed
)
SELECT * FROM claimed ORDER BY priority DESC, id ASC
\gset got_
WITH job_status AS (
    SELECT
        UNNEST(ARRAY[:got_id::bigint])                            AS id,
        UNNEST(ARRAY['successful'::pgqueuer_status]) AS status,
        UNNEST(ARRAY[NULL::jsonb])                             AS traceback
), deleted AS (
    DELETE FROM pgqueuer
    WHERE id = ANY(SELECT js.id FROM job_status js WHERE js.status != 'failed')
    RETURNING id, entrypoint, priority
), held AS (
    UPDATE pgqueuer
    SET status = 'failed', updated = NOW(), queue_manager_id = NULL
    WHERE id = ANY(SELECT js.id FROM job_status js WHERE js.status = 'failed')
    RETURNING id, entrypoint, priority
), all_resolved AS (
    SELECT id, entrypoint, priority FROM deleted
    UNION ALL
    SELECT id, entrypoint, priority FROM held
), merged AS (
    SELECT
        job_status.id           AS id,
        job_status.status       AS status,
        job_status.traceback    AS traceback,
        all_resolved.entrypoint AS entrypoint,
        all_resolved.priority   AS priority
    FROM job_status
    INNER JOIN all_resolved
        ON all_resolved.id = job_status.id
)
INSERT INTO pgqueuer_log (
    job_id,
    status,
    entrypoint,
    priority,
    traceback
)
SELECT id, status, entrypoint, priority, traceback FROM merged;
