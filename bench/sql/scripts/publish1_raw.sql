-- publish 1 event per transaction: raw INSERT into a table shaped like mbus.events
INSERT INTO raw_events (topic, key, payload) VALUES ('bench', NULL, :payload::jsonb) RETURNING id;
