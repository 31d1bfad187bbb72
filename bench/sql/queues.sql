-- Setup, fill and backlog blocks of the sql_queues scenario (loaded by bench.sql.model.queries).
-- Each side has its own database: these run there once (prepare), before a consume run (fill,
-- with %(n)s messages of %(payload)s), and around it (backlog: what is left to consume).

-- name: raw_table
CREATE TABLE raw_queue (id bigserial PRIMARY KEY, payload jsonb NOT NULL)

-- name: raw_fill
INSERT INTO raw_queue (payload) SELECT %(payload)s::jsonb FROM generate_series(1, %(n)s)

-- name: raw_backlog
SELECT count(*) FROM raw_queue

-- name: raw_lease_table
CREATE TABLE raw_lease (
    id bigserial PRIMARY KEY,
    vt timestamptz NOT NULL DEFAULT now(),
    token uuid,
    payload jsonb NOT NULL
)

-- name: raw_lease_index
CREATE INDEX raw_lease_vt ON raw_lease (vt, id)

-- name: raw_lease_fill
INSERT INTO raw_lease (payload) SELECT %(payload)s::jsonb FROM generate_series(1, %(n)s)

-- name: raw_lease_backlog
SELECT count(*) FROM raw_lease

-- name: mbus_queue
SELECT mbus.create_queue('bench', 1)

-- name: mbus_fill
SELECT count(*) FROM mbus.postn_bench(array_fill(%(payload)s::jsonb, ARRAY[%(n)s::integer]))

-- name: mbus_prio_fill
-- priorities 0..3 in turn: the queue is flagged, claims take the priority tier, then FIFO
SELECT count(mbus.post_bench(%(payload)s::jsonb, priority => g %% 4))
FROM generate_series(1, %(n)s) AS g

-- name: mbus_backlog
SELECT count(*) FROM mbus.q_bench

-- name: pgmq_queue
SELECT pgmq.create('bench')

-- name: pgmq_fill
SELECT count(*) FROM pgmq.send_batch('bench', array_fill(%(payload)s::jsonb, ARRAY[%(n)s::integer]))

-- name: pgmq_backlog
SELECT count(*) FROM pgmq.q_bench

-- name: pgqueuer_defines
SELECT '{bench}' AS pq_entrypoints, gen_random_uuid() AS pq_qm, '30 seconds' AS pq_heartbeat

-- name: pgqueuer_fill
-- PgQueuer's own enqueue statement (see scripts/post1_pgqueuer.sql), n jobs per call.
WITH input AS MATERIALIZED (
    SELECT
        nextval(
            (SELECT pg_get_serial_sequence('pgqueuer', 'id'))
        ) AS id,
        priority, entrypoint, payload, execute_after, dedupe_key, headers, ord
    FROM UNNEST(
        array_fill(0, ARRAY[%(n)s::integer]), array_fill('bench'::text, ARRAY[%(n)s::integer]),
        array_fill(convert_to(%(payload)s, 'UTF8'), ARRAY[%(n)s::integer]),
        array_fill('0'::interval, ARRAY[%(n)s::integer]),
        array_fill(NULL::text, ARRAY[%(n)s::integer]), array_fill(NULL::jsonb, ARRAY[%(n)s::integer])
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
    WHERE id IN (SELECT id FROM input)
)
SELECT count(*) FROM inserted

-- name: pgqueuer_backlog
SELECT count(*) FROM pgqueuer WHERE status = 'queued'

-- name: procrastinate_defines
SELECT worker_id AS procrastinate_worker FROM procrastinate_register_worker_v1()

-- name: procrastinate_fill
SELECT count(*) FROM unnest(procrastinate_defer_jobs_v1(array_fill(
    ROW('bench', 'bench_task', 0, NULL, NULL, %(payload)s::jsonb, NULL)::procrastinate_job_to_defer_v1,
    ARRAY[%(n)s::integer])))

-- name: procrastinate_backlog
SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'
