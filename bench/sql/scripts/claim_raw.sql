-- claim 100 due timers (a 30 s claim), then record them as done: raw SQL
WITH c AS (
    UPDATE raw_timers SET attempts = attempts + 1,
                          claimed_until = now() + interval '30 seconds'
    WHERE id = ANY (ARRAY(
        SELECT id FROM raw_timers
        WHERE status = 'pending' AND run_at <= now()
          AND (claimed_until IS NULL OR claimed_until <= now())
        ORDER BY run_at, id LIMIT 100 FOR UPDATE SKIP LOCKED))
    RETURNING id, url, context)
SELECT coalesce(array_agg(id), '{}') AS ids, array_agg(url) AS urls,
       array_agg(context) AS contexts
FROM c
\gset got_
UPDATE raw_timers SET status = 'notified', claimed_until = NULL WHERE id = ANY (:got_ids::bigint[]);
