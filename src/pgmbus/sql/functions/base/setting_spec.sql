-- Function: mbus.setting_spec()
--
-- Purpose:  The registry of settings: every key mbus.set_setting accepts, with its type, its
--           bounds and its default. Keys not listed here are refused. Types: 'interval' (a JSON
--           string PostgreSQL parses as an interval, between min_value and max_value, so always
--           positive) and 'integer' (a JSON number without a fraction, between min_value and
--           max_value). Add a key here (and read it with mbus.get_setting) to add a setting.
-- Params:   none
-- Returns:  TABLE (key text, kind text, min_value text, max_value text, fallback jsonb,
--           description text): one row per setting
-- Locks:    none (constant)
-- Calls:    none
-- Tables:   mbus.events
CREATE OR REPLACE FUNCTION mbus.setting_spec()
RETURNS TABLE (key text, kind text, min_value text, max_value text, fallback jsonb,
               description text)
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    VALUES
        ('streams.partition_interval', 'interval', '1 minute', '1 year', '"1 day"'::jsonb,
         'how long ids go to one partition of mbus.events before maintain() starts the next'),
        ('streams.partitions_ahead', 'integer', '1', '100', '2'::jsonb,
         'empty partitions maintain() keeps ready ahead'),
        ('streams.retention', 'interval', '1 minute', '100 years', '"7 days"'::jsonb,
         'a closed partition is dropped this long after it closed, unless a live group needs it'),
        ('spark.staged_ttl', 'interval', '1 minute', '1 year', '"1 day"'::jsonb,
         'staged rows of a Spark write nobody staged into for this long are dropped'),
        ('timers.max_context_bytes', 'integer', '2', '104857600', '65536'::jsonb,
         'largest context of a timer callback or schedule, in bytes of its JSON text'),
        ('timers.max_url_length', 'integer', '10', '65536', '4096'::jsonb,
         'longest URL of a timer callback or schedule, in bytes'),
        ('queues.iid_window', 'interval', '1 second', '1 year', '"24 hours"'::jsonb,
         'a client-given iid posted within this window is not stored again (idempotent posts)'),
        ('streams.max_delay', 'interval', '1 second', '10 years', '"30 days"'::jsonb,
         'the furthest ahead an event may be published with delayed_until (it holds a partition)'),
        ('streams.idempotency_window', 'interval', '1 second', '1 year', '"24 hours"'::jsonb,
         'an idempotency key published within this window on its topic is not stored again');
$$;
