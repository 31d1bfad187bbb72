-- create 1 timer per transaction (due in an hour): raw INSERT
\set k random(1, 1000000000000000)
INSERT INTO raw_timers (client_id, group_key, event_key, run_at, url)
VALUES (:tclient, 'g', 'e' || :k, now() + interval '1 hour', 'http://127.0.0.1:9/cb')
ON CONFLICT DO NOTHING RETURNING id;
