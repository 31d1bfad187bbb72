-- create 100 timers per call from a JSON array (as an HTTP API receives them): raw INSERT
\set k random(1, 1000000000000000)
INSERT INTO raw_timers (client_id, group_key, event_key, run_at, url)
SELECT (x->>'client_id')::bigint, x->>'group_key', x->>'event_key', (x->>'run_at')::timestamptz,
       x->>'url'
FROM jsonb_array_elements((
    SELECT jsonb_agg(jsonb_build_object(
        'client_id', :tclient::bigint, 'group_key', 'g', 'event_key', 'e' || :k || '-' || i,
        'run_at', now() + interval '1 hour', 'url', 'http://127.0.0.1:9/cb'))
    FROM generate_series(1, 100) AS i)) AS x
ON CONFLICT DO NOTHING RETURNING id;
