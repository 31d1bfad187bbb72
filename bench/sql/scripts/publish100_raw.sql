-- publish 100 events per statement: raw INSERT
INSERT INTO raw_events (topic, key, payload)
SELECT 'bench', NULL, p FROM unnest(array_fill(:payload::jsonb, ARRAY[100])) AS p
RETURNING id;
