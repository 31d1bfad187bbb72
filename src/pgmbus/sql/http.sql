-- Queries of the HTTP layer (pgmbus.http): authentication with scopes, the operations
-- snapshot behind /metrics and the dashboard, and the reads the engines' clients do not offer.

-- name: authenticate
SELECT client_id, name, scopes FROM mbus.api_authenticate(%(api_key)s);

-- name: set_scopes
SELECT mbus.api_set_scopes(%(name)s, %(scopes)s);

-- name: list_clients
SELECT id, name, scopes, created_at FROM mbus.timer_clients ORDER BY name;

-- name: dmq_get
SELECT dmq_id, qname, cname, id, iid, added, delayed_until, expires, headers, properties, data,
       consume_after, attempts, reason, died_at, priority
FROM mbus.dmq WHERE dmq_id = %(dmq_id)s;

-- name: dmq_delete
SELECT mbus.dmq_delete(%(dmq_id)s) AS qname;

-- name: dmq_page
SELECT dmq_id, qname, cname, iid, data, headers, properties, attempts, reason, died_at, priority
FROM mbus.dmq
WHERE (%(queue)s::text IS NULL OR qname = %(queue)s::text) AND dmq_id > %(after)s
ORDER BY dmq_id
LIMIT %(limit)s;

-- name: stream_read
SELECT token, lease_until, cursor, id, topic, key, payload, headers, published_at
FROM mbus.http_read(%(group)s, %(max_events)s, %(slot)s, %(lease)s, %(client_id)s);

-- name: stream_commit
SELECT mbus.http_commit(%(group)s, %(token)s);

-- name: stream_extend
SELECT mbus.http_extend(%(group)s, %(token)s, %(lease)s);

-- name: stream_leases
SELECT group_name, slot, token, events, leased_at, lease_until
FROM mbus.http_stream_leases
WHERE %(group)s::text IS NULL OR group_name = %(group)s::text
ORDER BY group_name, slot;

-- name: stream_leases_clear
DELETE FROM mbus.http_stream_leases WHERE group_name = %(group)s;

-- name: saga_page
SELECT saga_id, name, state, reason, created_at, finished_at, steps FROM mbus.sagas
WHERE %(state)s::text IS NULL OR state = %(state)s::text
ORDER BY saga_id DESC LIMIT %(limit)s;

-- name: timers_overview
-- Per client: callbacks by status, due now, late (due for more than late_s seconds), failed.
SELECT c.name AS client,
       count(t.id) FILTER (WHERE t.status = 'pending') AS pending,
       count(t.id) FILTER (WHERE t.status = 'pending' AND t.run_at <= now()) AS due,
       count(t.id) FILTER (WHERE t.status = 'pending'
                           AND t.run_at <= now() - make_interval(secs => %(late_s)s)) AS late,
       count(t.id) FILTER (WHERE t.status = 'notified') AS notified,
       count(t.id) FILTER (WHERE t.status = 'failed') AS failed,
       count(t.id) FILTER (WHERE t.status = 'cancelled') AS cancelled,
       count(t.id) FILTER (WHERE t.status = 'rejected') AS rejected
FROM mbus.timer_clients AS c
LEFT JOIN mbus.timer_callbacks AS t ON t.client_id = c.id
WHERE %(client)s::text IS NULL OR c.name = %(client)s::text
GROUP BY c.name ORDER BY c.name;

-- name: timers_page
-- Callbacks of the clients the key may see (clients: filtered before the LIMIT, so a page is
-- never emptied by others' rows), or of one, newest first; status filters; due=true: pending
-- and due.
SELECT c.name AS client, mbus.timer_callback_json(t) AS callback, t.last_status_code,
       t.last_error, t.updated_at
FROM mbus.timer_callbacks AS t JOIN mbus.timer_clients AS c ON c.id = t.client_id
WHERE c.name = ANY (%(clients)s::text[])
  AND (%(client)s::text IS NULL OR c.name = %(client)s::text)
  AND (%(status)s::text IS NULL OR t.status = %(status)s::text)
  AND (NOT %(due)s OR (t.status = 'pending' AND t.run_at <= now()))
ORDER BY t.id DESC LIMIT %(limit)s;

-- name: timer_client_id
SELECT id FROM mbus.timer_clients WHERE name = %(name)s;

-- name: schedules_page
SELECT c.name AS client, mbus.timer_schedule_json(s) AS schedule
FROM mbus.timer_schedules AS s JOIN mbus.timer_clients AS c ON c.id = s.client_id
WHERE c.name = ANY (%(clients)s::text[])
  AND (%(client)s::text IS NULL OR c.name = %(client)s::text)
ORDER BY c.name, s.schedule_key LIMIT %(limit)s;

-- name: timer_client_names
SELECT name FROM mbus.timer_clients ORDER BY name;

-- name: snapshot
-- Everything /metrics exports, in one statement (one round trip per scrape). Queue figures come
-- from mbus.queue_stats (a count over each queue's deliveries; posted/consumed totals from the
-- counter sequences, mbus.queue_counters), stream figures from
-- mbus.group_status; the timers' call figures are the attempts committed since the previous
-- scrape (after_xid, see 'calls'), found among the last window_s seconds of mbus.timer_attempts
-- through its started_at index; the service adds them to its own running totals.
SELECT jsonb_build_object(
    'now', extract(epoch FROM clock_timestamp()),
    'queues', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'queue', s.qname, 'consumer', s.cname, 'depth', s.depth, 'ready', s.ready,
                   'delayed', s.delayed, 'leased', s.leased, 'expired', s.expired,
                   'oldest_age', coalesce(extract(epoch FROM s.oldest_age), 0), 'dmq', s.dmq,
                   'selector_errors', s.selector_errors, 'posted', s.posted,
                   'consumed', s.consumed, 'paused', s.paused,
                   'dmq_unreported', s.dmq_unreported)
                   ORDER BY s.qname, s.cname), '[]')
               FROM mbus.queue_stats() AS s),
    'queue_totals', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                         'queue', t.qname, 'posted', t.posted, 'consumed', t.consumed)
                         ORDER BY t.qname), '[]')
                     FROM mbus.queue_counters() AS t WHERE t.cname IS NULL),
    'dmq', (SELECT coalesce(jsonb_agg(jsonb_build_object('queue', d.qname, 'messages', d.n)
                                      ORDER BY d.qname), '[]')
            FROM (SELECT q.qname, count(x.dmq_id) AS n
                  FROM mbus.queue AS q LEFT JOIN mbus.dmq AS x ON x.qname = q.qname
                  GROUP BY q.qname) AS d),
    'groups', (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'group', s.group_name, 'slot', s.slot, 'state', s.state,
                   'pending', s.pending_events,
                   'lag_seconds', coalesce(extract(epoch FROM clock_timestamp()
                                                   - s.oldest_pending_at), 0),
                   'committed_age', extract(epoch FROM clock_timestamp() - s.committed_at),
                   'retries', s.retries, 'dead_letters', s.dead_letters)
                   ORDER BY s.group_name, s.slot), '[]')
               FROM mbus.group_status() AS s),
    'stream_counters', (SELECT coalesce(jsonb_object_agg(c.name, c.value), '{}')
                        FROM mbus.stream_counters AS c),
    'partitions', (SELECT jsonb_build_object(
                       'total', count(*),
                       'open', count(*) FILTER (WHERE p.closed_at IS NULL),
                       'oldest_closed_age', coalesce(extract(epoch FROM clock_timestamp()
                                                             - min(p.closed_at)), 0))
                   FROM mbus.event_partitions AS p),
    'timers', (SELECT jsonb_build_object(
                   'by_status', coalesce((SELECT jsonb_object_agg(x.status, x.n) FROM (
                       SELECT t.status, count(*) AS n FROM mbus.timer_callbacks AS t
                       GROUP BY t.status) AS x), '{}'),
                   'due', (SELECT count(*) FROM mbus.timer_callbacks AS t
                           WHERE t.status = 'pending' AND t.run_at <= clock_timestamp()),
                   'late', (SELECT count(*) FROM mbus.timer_callbacks AS t
                            WHERE t.status = 'pending' AND t.run_at <= clock_timestamp()
                                  - make_interval(secs => %(late_s)s)),
                   'oldest_due_age', coalesce((SELECT extract(epoch FROM clock_timestamp()
                                                              - min(t.run_at))
                                               FROM mbus.timer_callbacks AS t
                                               WHERE t.status = 'pending'
                                                 AND t.run_at <= clock_timestamp()), 0),
                   'dispatchers', (SELECT count(*) FROM mbus.timer_dispatchers AS d
                                   WHERE d.heartbeat_at > clock_timestamp()
                                                          - make_interval(secs => 60)),
                   'buckets', (SELECT count(*) FROM mbus.timer_buckets),
                   'buckets_leased', (SELECT count(*) FROM mbus.timer_buckets AS b
                                      WHERE b.lease_until > clock_timestamp()),
                   'schedules', (SELECT count(*) FROM mbus.timer_schedules),
                   'schedules_paused', (SELECT count(*) FROM mbus.timer_schedules AS s
                                        WHERE s.paused))),
    'calls', (WITH h AS (
                  SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS horizon,
                         pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax),
              a AS (
                  -- The attempts whose inserting transaction ended between the previous
                  -- scrape's horizon (after_xid) and this one's: every transaction below a
                  -- snapshot's xmin has ended, so each committed attempt falls in exactly one
                  -- scrape's range and the totals the service adds up never go down. The
                  -- row's 32-bit xmin is widened to 64 bits against the snapshot's xmax.
                  SELECT a.callback_id, a.attempt, a.call, a.outcome, a.started_at
                  FROM mbus.timer_attempts AS a, h
                  WHERE %(after_xid)s::bigint IS NOT NULL
                    AND a.started_at > clock_timestamp() - make_interval(secs => %(window_s)s)
                    AND h.xmax - mod(mod(h.xmax - a.xmin::text::bigint, 4294967296)
                                     + 4294967296, 4294967296)
                        BETWEEN %(after_xid)s::bigint AND h.horizon - 1),
              l AS (
                  SELECT extract(epoch FROM a.started_at - c.originally_run_at)::float8 AS late
                  FROM a JOIN mbus.timer_callbacks AS c ON c.id = a.callback_id
                  WHERE a.attempt = 1 AND a.call = 0)
              SELECT jsonb_build_object(
                  'horizon', (SELECT h.horizon FROM h),
                  'outcomes', coalesce((SELECT jsonb_object_agg(r.outcome, r.n) FROM (
                      SELECT a.outcome, count(*) AS n FROM a GROUP BY a.outcome) AS r), '{}'),
                  'lateness', jsonb_build_object(
                      'count', (SELECT count(*) FROM l),
                      'sum', (SELECT coalesce(sum(l.late), 0) FROM l),
                      'buckets', (SELECT jsonb_agg((SELECT count(*) FROM l WHERE l.late <= b.le)
                                                   ORDER BY b.le)
                                  FROM unnest(%(buckets)s::float8[]) AS b(le))))),
    'sagas', (SELECT coalesce(jsonb_object_agg(x.state, x.n), '{}') FROM (
                  SELECT s.state, count(*) AS n FROM mbus.saga AS s GROUP BY s.state) AS x)
) AS snapshot;

-- name: has_scopes
-- Is the scopes DDL installed? (Before it, keys authenticate for their own timers only.)
SELECT to_regprocedure('mbus.api_authenticate(text)') IS NOT NULL;

-- name: queue_catalog_lock
-- The lock mbus.create_queue and every other catalog change of queues take (see
-- mbus.create_queue): held first, the next statement's look at mbus.queue is the truth until
-- commit, so of concurrent "create if missing" calls exactly one creates.
SELECT pg_advisory_xact_lock(1835165041);

-- name: queue_exists
SELECT EXISTS (SELECT 1 FROM mbus.queue WHERE qname = %(queue)s) AS exists;

-- name: queue_create
SELECT mbus.create_queue(%(queue)s, 1, %(roles)s);

-- name: series_sample
-- One sample of the figures the dashboard draws over time (pgmbus.http.samples): per queue and
-- consumer depth, the posted/consumed totals and dead messages; per stream group slot the unread
-- events and how long the oldest has waited; per timer client the due and late callbacks, how
-- late the most overdue one is, and the failed total. Rates are the differences of samples.
SELECT jsonb_build_object(
    'at', extract(epoch FROM clock_timestamp()),
    'queues', (SELECT coalesce(jsonb_agg(jsonb_build_array(
                   s.qname, s.cname, s.depth, s.posted, s.consumed, s.dmq)), '[]')
               FROM mbus.queue_stats() AS s),
    'groups', (SELECT coalesce(jsonb_agg(jsonb_build_array(
                   s.group_name, s.slot, s.pending_events,
                   coalesce(extract(epoch FROM clock_timestamp() - s.oldest_pending_at), 0))),
                   '[]')
               FROM mbus.group_status() AS s),
    'timers', (SELECT coalesce(jsonb_agg(jsonb_build_array(
                   x.client, x.due, x.late, x.lateness, x.failed)), '[]')
               FROM (SELECT c.name AS client,
                            count(t.id) FILTER (WHERE t.status = 'pending'
                                                AND t.run_at <= clock_timestamp()) AS due,
                            count(t.id) FILTER (WHERE t.status = 'pending'
                                                AND t.run_at <= clock_timestamp()
                                                    - make_interval(secs => %(late_s)s)) AS late,
                            coalesce(extract(epoch FROM clock_timestamp() - min(t.run_at)
                                FILTER (WHERE t.status = 'pending'
                                        AND t.run_at <= clock_timestamp())), 0) AS lateness,
                            count(t.id) FILTER (WHERE t.status = 'failed') AS failed
                     FROM mbus.timer_clients AS c
                     LEFT JOIN mbus.timer_callbacks AS t ON t.client_id = c.id
                     GROUP BY c.name) AS x)
) AS sample;

-- name: messages_page
-- A page of a queue's messages for the browser (mbus.http_messages: reads only).
SELECT kind, id, c, dmq_id, iid, consumer, state, priority, added, vt, expires, attempts,
       reason, died_at, headers, data
FROM mbus.http_messages(%(queue)s, %(state)s, %(consumer)s, %(priority)s, %(header)s,
                        %(value)s, %(path)s, %(field)s, %(since)s, %(until)s, %(iid)s,
                        %(after_id)s, %(after_c)s, %(after_dead)s, %(limit)s);

-- name: message_detail
SELECT mbus.http_message(%(queue)s, %(iid)s) AS message;

-- name: message_act
SELECT mbus.http_message_act(%(queue)s, %(iid)s, %(action)s, %(consumer)s, %(reason)s) AS changed;

-- name: group_around
SELECT side, id, topic, key, payload, headers, published_at
FROM mbus.http_group_around(%(group)s, %(topic)s, %(slot)s, %(n)s);

-- name: group_position
SELECT mbus.group_cursor(%(group)s, %(slot)s) AS cursor;
