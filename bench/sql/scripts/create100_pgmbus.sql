-- create 100 timers per call from a JSON array: pgmbus timer_create_many
\set k random(1, 1000000000000000)
SELECT created FROM mbus.timer_create_many((
    SELECT jsonb_agg(jsonb_build_object(
        'client_id', :tclient::bigint, 'group_key', 'g', 'event_key', 'e' || :k || '-' || i,
        'run_at', now() + interval '1 hour', 'url', 'http://127.0.0.1:9/cb'))
    FROM generate_series(1, 100) AS i));
