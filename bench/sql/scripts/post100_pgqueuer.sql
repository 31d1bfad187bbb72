-- post 100 jobs per call: PgQueuer's own enqueue statement, copied from pgqueuer 1.6.0
-- (pgqueuer/adapters/persistence/qb.py, QueryQueueBuilder.build_enqueue_query, on_conflict
-- "raise", as run by Queries.enqueue). Its six array parameters ($1..$6) are built here:
-- 100 jobs of priority 0, entrypoint 'bench', the payload as bytea, no delay, no dedupe key.
WITH input AS MATERIALIZED (
    -- MATERIALIZED: nextval is volatile and `input` is referenced twice,
    -- so pin single evaluation -- each input row gets exactly one id.
    -- The scalar sub-select resolves the sequence name once (InitPlan)
    -- rather than a catalog lookup per row.
    -- Skipped ON CONFLICT rows leave harmless id gaps; a pre-count CTE
    -- could avoid them but isn't worth the extra pass.
    SELECT
        nextval(
            (SELECT pg_get_serial_sequence('pgqueuer', 'id'))
        ) AS id,
        priority, entrypoint, payload, execute_after, dedupe_key, headers, ord
    FROM UNNEST(
        array_fill(0, ARRAY[100]), array_fill('bench'::text, ARRAY[100]),
        array_fill(convert_to(:payload, 'UTF8'), ARRAY[100]),
        array_fill('0'::interval, ARRAY[100]), array_fill(NULL::text, ARRAY[100]),
        array_fill(NULL::jsonb, ARRAY[100])
    ) WITH ORDINALITY AS
        t(priority, entrypoint, payload, execute_after, dedupe_key, headers, ord)
),
inserted AS (
    INSERT INTO pgqueuer AS job
    (id, priority, entrypoint, payload, execute_after, dedupe_key, headers, status)
    SELECT id, priority, entrypoint, payload, execute_after + NOW(),
        dedupe_key, headers, 'queued'
    FROM input
    RETURNING id, entrypoint, priority, dedupe_key
),
logged AS (
    INSERT INTO pgqueuer_log
    (job_id, status, entrypoint, priority)
    SELECT id, 'queued', entrypoint, priority
    FROM inserted
    -- A job whose priority was updated was queued before; log new jobs only.
    WHERE id IN (SELECT id FROM input)
)
-- Join maps each surviving id back to its input ordinal. Rows skipped by
-- ON CONFLICT are absent from `inserted`, so their positions never appear.
SELECT i.ord AS ord, ins.id AS id
FROM inserted ins
JOIN input i ON i.id = ins.id
ORDER BY i.ord;
