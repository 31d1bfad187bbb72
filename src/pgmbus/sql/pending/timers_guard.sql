-- timers guard (issue 12, items 11-13): bounds on every number, size limits on stored fields,
-- a cron that never fires refused, a broken schedule paused with its reason, and results
-- recorded per callback (one bad row never fails the others).
--
-- PENDING: complete CREATE OR REPLACE definitions for the lead to move into
-- src/pgmbus/sql/functions/timers/<name>.sql (each block below has its header and says where
-- it goes in ORDER), plus one ALTER TABLE and two settings rows that
-- belong in a migration. The timers tests apply this file after install (tests/timers/conftest.py)
-- until then. Re-runnable.
--
-- Bounds (documented in docs/timers.md, mirrored by pgmbus.timers.models):
--   retry.fast_retries  integer 0..10
--   retry.delay_s       0 < x <= 2592000 (30 days)
--   retry.max_delay_s   0 < x <= 2592000 (30 days)
--   retry.factor        1 <= x <= 100
--   stop_after_delay_s  0 <= x <= 31622400 (366 days)
--   interval_s          1 <= x <= 31622400 (366 days)
--   run_at, originally_run_at, start_at, end_at: from 1970-01-01 to before 9998-01-01 (UTC)
--   clean's ttl_days    0..36500
-- Size limits (settings, defaults): timers.max_context_bytes 65536 (bytes of the context's JSON
-- text), timers.max_url_length 4096 (bytes); keys 256 characters, schedule keys 200, cron 100,
-- time zone names 64.

-- --------------------------------------------------------------------------------------------
-- DDL and settings (for a migration)
-- --------------------------------------------------------------------------------------------
ALTER TABLE mbus.timer_schedules ADD COLUMN IF NOT EXISTS paused_reason text;
COMMENT ON COLUMN mbus.timer_schedules.paused_reason IS
    'Why the scheduler paused the schedule (its next run could not be computed or created); '
    'NULL when running or paused by its client.';

INSERT INTO mbus.settings (key, value, description) VALUES
    ('timers.max_context_bytes', '65536',
     'largest context of a timer callback or schedule, in bytes of its JSON text'),
    ('timers.max_url_length', '4096', 'longest URL of a timer callback or schedule, in bytes')
ON CONFLICT (key) DO NOTHING;

-- Function: mbus.timer_limits()
--
-- Purpose:  The size limits in force for stored timer fields, read from the settings
--           timers.max_context_bytes (default 65536: bytes of the context's JSON text) and
--           timers.max_url_length (default 4096 bytes); a missing or non-numeric setting means
--           its default. Read once per statement by the callers and passed on.
-- Params:   none
-- Returns:  jsonb {"max_context_bytes": n, "max_url_length": n}
-- Locks:    none (reads mbus.settings)
-- Callers:  mbus.timer_create_many, mbus.timer_update, mbus.timer_schedule_create
-- NEW (issue 12 item 12); file functions/timers/timer_limits.sql, in ORDER before
-- timer_retry_policy.
CREATE OR REPLACE FUNCTION mbus.timer_limits()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT jsonb_build_object(
        'max_context_bytes',
        CASE WHEN jsonb_typeof(c) = 'number' THEN c ELSE '65536' END,
        'max_url_length',
        CASE WHEN jsonb_typeof(u) = 'number' THEN u ELSE '4096' END)
    FROM (SELECT mbus.get_setting('timers.max_context_bytes') AS c,
                 mbus.get_setting('timers.max_url_length') AS u) AS s;
$$;

-- Function: mbus.timer_retry_problem(p_retry)
--
-- Purpose:  Why a retry policy is refused, or NULL when it is fine. Fields, all optional:
--           fast_retries an integer 0..10, kind 'constant' or 'exponential', delay_s and
--           max_delay_s > 0 and <= 2592000 (30 days), factor 1..100; no other field. Numbers
--           are compared as numerics (JSON numbers), so no value can overflow a cast, and the
--           message never echoes more than 40 characters of the input.
-- Params:   p_retry  the policy given by the user (jsonb; NULL or JSON null = defaults)
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Callers:  mbus.timer_retry_policy, mbus.timer_item_problem, mbus.timer_schedule_create
-- NEW (issue 12 item 11); file functions/timers/timer_retry_problem.sql, in ORDER before
-- timer_retry_policy.
CREATE OR REPLACE FUNCTION mbus.timer_retry_problem(p_retry jsonb)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_in jsonb := coalesce(nullif(p_retry, 'null'), '{}');
    v_key text;
    r jsonb;
BEGIN
    IF jsonb_typeof(v_in) <> 'object' THEN
        RETURN 'retry must be a JSON object';
    END IF;
    SELECT k INTO v_key FROM jsonb_object_keys(v_in) AS k
    WHERE k NOT IN ('fast_retries', 'kind', 'delay_s', 'factor', 'max_delay_s') LIMIT 1;
    IF v_key IS NOT NULL THEN
        RETURN format('retry has an unknown field %L', left(v_key, 40));
    END IF;
    FOREACH v_key IN ARRAY ARRAY['fast_retries', 'delay_s', 'factor', 'max_delay_s'] LOOP
        IF jsonb_typeof(v_in->v_key) NOT IN ('number', 'null') THEN
            RETURN format('retry.%s must be a number', v_key);
        END IF;
    END LOOP;
    r := jsonb_build_object('fast_retries', 2, 'kind', 'constant', 'delay_s', 60,
                            'factor', 2, 'max_delay_s', 3600) || jsonb_strip_nulls(v_in);
    -- JSON numbers are numerics: compared as such, no value can overflow a cast
    IF NOT ((r->>'fast_retries')::numeric BETWEEN 0 AND 10)
       OR (r->>'fast_retries')::numeric <> trunc((r->>'fast_retries')::numeric) THEN
        RETURN 'retry.fast_retries must be an integer from 0 to 10';
    END IF;
    IF jsonb_typeof(r->'kind') <> 'string' OR r->>'kind' NOT IN ('constant', 'exponential') THEN
        RETURN 'retry.kind must be constant or exponential';
    END IF;
    IF NOT ((r->>'delay_s')::numeric > 0 AND (r->>'delay_s')::numeric <= 2592000) THEN
        RETURN 'retry.delay_s must be > 0 and <= 2592000 (30 days)';
    END IF;
    IF NOT ((r->>'max_delay_s')::numeric > 0 AND (r->>'max_delay_s')::numeric <= 2592000) THEN
        RETURN 'retry.max_delay_s must be > 0 and <= 2592000 (30 days)';
    END IF;
    IF NOT ((r->>'factor')::numeric BETWEEN 1 AND 100) THEN
        RETURN 'retry.factor must be from 1 to 100';
    END IF;
    RETURN NULL;
END;
$$;

-- Function: mbus.timer_time_problem(p_name, p_t)
--
-- Purpose:  Why a time is refused, or NULL: a timer time must be from 1970-01-01 to before
--           9998-01-01 UTC. Infinities and far dates would overflow delays and deadlines, and
--           clients (Python's datetime ends at 9999) could not read them back.
-- Params:   p_name  the field's name, for the message
--           p_t     the time (NULL = not given: fine)
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Callers:  mbus.timer_field_problem, mbus.timer_schedule_create
-- NEW (issue 12 item 11); file functions/timers/timer_time_problem.sql, in ORDER before
-- timer_field_problem.
CREATE OR REPLACE FUNCTION mbus.timer_time_problem(p_name text, p_t timestamptz)
RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT CASE WHEN p_t IS NOT NULL
                     AND NOT (p_t >= '1970-01-01 00:00:00+00' AND p_t < '9998-01-01 00:00:00+00')
                THEN format('%s must be from 1970-01-01 to before 9998-01-01 (UTC)', p_name)
           END;
$$;

-- Function: mbus.timer_field_problem(p_limits, p_run_at, p_originally_run_at, p_url,
--                                     p_context, p_stop_after_delay_s)
--
-- Purpose:  Why one of the given fields of a callback or schedule is refused, or NULL: times
--           (mbus.timer_time_problem), the URL (at most max_url_length bytes, http or https
--           without white space), the context (an object of at most max_context_bytes bytes of
--           JSON text), stop_after_delay_s (0..31622400, 366 days; NaN refused). NULL fields are
--           not checked. Messages name the setting that sets a limit.
-- Params:   p_limits  mbus.timer_limits() of the statement
--           the fields, each NULL when not given
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Callers:  mbus.timer_item_problem, mbus.timer_update, mbus.timer_schedule_create
-- NEW (issue 12 items 11-12); file functions/timers/timer_field_problem.sql, in ORDER before
-- timer_item_problem.
CREATE OR REPLACE FUNCTION mbus.timer_field_problem(p_limits jsonb,
    p_run_at timestamptz DEFAULT NULL, p_originally_run_at timestamptz DEFAULT NULL,
    p_url text DEFAULT NULL, p_context jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_size bigint;
    v_problem text;
BEGIN
    IF p_run_at IS NOT NULL OR p_originally_run_at IS NOT NULL THEN
        v_problem := coalesce(mbus.timer_time_problem('run_at', p_run_at),
                              mbus.timer_time_problem('originally_run_at', p_originally_run_at));
        IF v_problem IS NOT NULL THEN
            RETURN v_problem;
        END IF;
    END IF;
    IF p_url IS NOT NULL THEN
        IF octet_length(p_url) > (p_limits->>'max_url_length')::bigint THEN
            RETURN format('url is %s bytes long; the limit is %s (setting timers.max_url_length)',
                          octet_length(p_url), p_limits->>'max_url_length');
        END IF;
        IF p_url !~* '^https?://[^[:space:]]+$' THEN
            RETURN 'url must be an http or https URL without white space';
        END IF;
    END IF;
    IF p_context IS NOT NULL THEN
        IF jsonb_typeof(p_context) <> 'object' THEN
            RETURN 'context must be a JSON object';
        END IF;
        v_size := octet_length(p_context::text);
        IF v_size > (p_limits->>'max_context_bytes')::bigint THEN
            RETURN format('context is %s bytes of JSON; the limit is %s '
                          '(setting timers.max_context_bytes)',
                          v_size, p_limits->>'max_context_bytes');
        END IF;
    END IF;
    IF p_stop_after_delay_s IS NOT NULL
       AND NOT (p_stop_after_delay_s >= 0 AND p_stop_after_delay_s <= 31622400) THEN
        RETURN 'stop_after_delay_s must be from 0 to 31622400 (366 days)';
    END IF;
    RETURN NULL;
END;
$$;

-- Function: mbus.timer_item_problem(p_item, p_limits)
--
-- Purpose:  Why an item of mbus.timer_create_many is refused, or NULL: an object with a
--           numeric client_id, group_key and event_key of 1-256 characters without '/' or
--           control characters, a string url, an object (or null) context, a number (or null)
--           stop_after_delay_s in 0..31622400, a number (or null) schedule_id, run_at and
--           originally_run_at that read as timestamps (a failed cast is caught: the only
--           subtransaction here), a retry policy (mbus.timer_retry_problem, only when given)
--           and mbus.timer_field_problem. Turns what used to be CHECK violations and cast
--           errors (23514, 22P02, 22007, 22003) into one typed reason.
-- Params:   p_item    one element of p_items
--           p_limits  mbus.timer_limits() of the statement
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Callers:  mbus.timer_create_many
-- NEW (issue 12 items 11-12); file functions/timers/timer_item_problem.sql, in ORDER before
-- timer_create_many.
CREATE OR REPLACE FUNCTION mbus.timer_item_problem(p_item jsonb, p_limits jsonb)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_run_at timestamptz;
    v_originally timestamptz;
    v_problem text;
BEGIN
    IF jsonb_typeof(p_item) IS DISTINCT FROM 'object' THEN
        RETURN 'an item must be a JSON object';
    END IF;
    IF jsonb_typeof(p_item->'client_id') IS DISTINCT FROM 'number' THEN
        RETURN 'client_id must be a number';
    END IF;
    IF jsonb_typeof(p_item->'group_key') IS DISTINCT FROM 'string'
       OR length(p_item->>'group_key') NOT BETWEEN 1 AND 256
       OR p_item->>'group_key' ~ '[/[:cntrl:]]' THEN
        RETURN 'group_key must be 1 to 256 characters, without "/" and control characters';
    END IF;
    IF jsonb_typeof(p_item->'event_key') IS DISTINCT FROM 'string'
       OR length(p_item->>'event_key') NOT BETWEEN 1 AND 256
       OR p_item->>'event_key' ~ '[/[:cntrl:]]' THEN
        RETURN 'event_key must be 1 to 256 characters, without "/" and control characters';
    END IF;
    IF jsonb_typeof(p_item->'url') IS DISTINCT FROM 'string' THEN
        RETURN 'url must be a string';
    END IF;
    IF jsonb_typeof(p_item->'context') NOT IN ('object', 'null') THEN
        RETURN 'context must be a JSON object';
    END IF;
    IF jsonb_typeof(p_item->'stop_after_delay_s') NOT IN ('number', 'null') THEN
        RETURN 'stop_after_delay_s must be a number';
    END IF;
    IF NOT ((p_item->>'stop_after_delay_s')::numeric BETWEEN 0 AND 31622400) THEN
        RETURN 'stop_after_delay_s must be from 0 to 31622400 (366 days)';
    END IF;
    IF jsonb_typeof(p_item->'schedule_id') NOT IN ('number', 'null') THEN
        RETURN 'schedule_id must be a number';
    END IF;
    BEGIN
        v_run_at := (p_item->>'run_at')::timestamptz;
        v_originally := (p_item->>'originally_run_at')::timestamptz;
    EXCEPTION WHEN data_exception THEN
        RETURN 'run_at and originally_run_at must be timestamps (ISO 8601 with an offset)';
    END;
    IF v_run_at IS NULL THEN
        RETURN 'run_at is required';
    END IF;
    IF p_item->'retry' IS NOT NULL AND p_item->'retry' <> 'null' THEN
        v_problem := mbus.timer_retry_problem(p_item->'retry');
        IF v_problem IS NOT NULL THEN
            RETURN v_problem;
        END IF;
    END IF;
    RETURN mbus.timer_field_problem(p_limits, v_run_at, v_originally, p_item->>'url',
                                    nullif(p_item->'context', 'null'));
END;
$$;

-- Function: mbus.timer_cron_problem(p_cron)
--
-- Purpose:  Why a cron expression is refused, or NULL (NULL cron: fine). Checked in SQL: at
--           most 100 characters, only the characters cron uses, exactly 5 fields (minute hour
--           day-of-month month day-of-week: croniter would read a sixth as seconds), and a
--           date that never exists: with day-of-week '*' or '?' and plain lists of numbers as
--           day-of-month and month, no listed month has a listed day (0 0 31 2 *). Ranges and
--           steps are left to the Python scheduler (croniter), which pauses a schedule it
--           cannot compute (mbus.timer_schedule_pause_broken).
-- Params:   p_cron  the expression
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Callers:  mbus.timer_schedule_create
-- NEW (issue 12 item 13); file functions/timers/timer_cron_problem.sql, in ORDER before
-- timer_schedule_create.
CREATE OR REPLACE FUNCTION mbus.timer_cron_problem(p_cron text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    f text[];
BEGIN
    IF p_cron IS NULL THEN
        RETURN NULL;
    END IF;
    IF length(p_cron) > 100 THEN
        RETURN 'cron must be at most 100 characters';
    END IF;
    IF p_cron !~ '^[0-9A-Za-z*/,?#[:space:]-]+$' THEN
        RETURN format('cron %L has characters cron does not use', p_cron);
    END IF;
    f := regexp_split_to_array(btrim(p_cron), '[[:space:]]+');
    IF coalesce(array_length(f, 1), 0) <> 5 THEN
        RETURN format('cron %L must have 5 fields: minute hour day-of-month month day-of-week',
                      p_cron);
    END IF;
    IF f[5] IN ('*', '?') AND f[3] ~ '^[0-9]{1,2}(,[0-9]{1,2})*$'
       AND f[4] ~ '^[0-9]{1,2}(,[0-9]{1,2})*$'
       AND NOT EXISTS (
           SELECT FROM unnest(string_to_array(f[3], ',')::integer[]) AS d,
                       unnest(string_to_array(f[4], ',')::integer[]) AS m
           WHERE m BETWEEN 1 AND 12
             AND d BETWEEN 1 AND (ARRAY[31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[m]) THEN
        RETURN format('cron %L never fires: no month %s has a day %s', p_cron, f[4], f[3]);
    END IF;
    RETURN NULL;
END;
$$;

-- Function: mbus.timer_retry_merge(p_retry)
--
-- Purpose:  A retry policy with its defaults filled in, unchecked: 2 fast retries, kind
--           'constant', delay_s 60, factor 2, max_delay_s 3600; given keys override them
--           (JSON nulls ignored). For values already checked (timer_create_many's items, after
--           mbus.timer_item_problem), so a batch checks each policy once.
-- Params:   p_retry  the policy (jsonb; NULL or JSON null = defaults)
-- Returns:  jsonb {fast_retries, kind, delay_s, factor, max_delay_s}
-- Locks:    none (computes only)
-- Callers:  mbus.timer_retry_policy, mbus.timer_create_many
-- NEW; file functions/timers/timer_retry_merge.sql, in ORDER before timer_retry_policy.
CREATE OR REPLACE FUNCTION mbus.timer_retry_merge(p_retry jsonb)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT '{"fast_retries": 2, "kind": "constant", "delay_s": 60, "factor": 2,
             "max_delay_s": 3600}'::jsonb
           || jsonb_strip_nulls(coalesce(nullif(p_retry, 'null'), '{}'));
$$;

-- Function: mbus.timer_retry_policy(p_retry)
--
-- Purpose:  A retry policy with its defaults filled in (mbus.timer_retry_merge) and its values
--           checked (mbus.timer_retry_problem: fast_retries an integer 0..10, kind 'constant'
--           or 'exponential', delay_s and max_delay_s in (0, 2592000], factor 1..100, no other
--           key), as it is stored with a schedule.
-- Params:   p_retry  the policy given by the user (jsonb object; NULL or JSON null = defaults)
-- Returns:  jsonb {fast_retries, kind, delay_s, factor, max_delay_s}; MB006 with the reason
-- Locks:    none (computes only)
-- Callers:  mbus.timer_schedule_create (timer_create_many checks with timer_item_problem)
-- CHANGED (issue 12 item 11): upper bounds, unknown keys refused.
CREATE OR REPLACE FUNCTION mbus.timer_retry_policy(p_retry jsonb)
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_problem text := mbus.timer_retry_problem(p_retry);
BEGIN
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = v_problem;
    END IF;
    RETURN mbus.timer_retry_merge(p_retry);
END;
$$;

-- Function: mbus.timer_create_many(p_items, p_now)
--
-- Purpose:  Create callbacks in one statement (the HTTP API's batches, schedule occurrences),
--           idempotent on (client_id, group_key, event_key): an existing callback is returned
--           unchanged with created = false, and so is a key repeated in the same batch (its
--           first item creates). Every item is checked first (mbus.timer_item_problem: bounds,
--           size limits of mbus.timer_limits, key characters, URL, times): MB006 with the
--           reason, prefixed by 'item <n>: ' in a batch of several, and nothing is created (the
--           HTTP batcher then retries items alone, so one bad item fails only its request).
--           Per item: the retry policy is completed (mbus.timer_retry_merge),
--           originally_run_at defaults to run_at, context to '{}', stop_after_delay_s to
--           86400, and the bucket is abs(hashtextextended(group_key || '/' || event_key,
--           client_id)) modulo the number of buckets. Every created callback gets a 'create'
--           row in the change log (no notification). A second statement returns one row per
--           item, in item order, joined to the callbacks by key. JIT is off: generic plans'
--           estimates can cross jit_above_cost, and compiling (~300 ms measured on the
--           dispatcher's statements) costs more than a batch of a few thousand rows.
-- Params:   p_items  a JSON array of objects {client_id, group_key, event_key, run_at, url,
--                    context?, retry?, stop_after_delay_s?, originally_run_at?, schedule_id?}
--                    (MB005 when it is not an array)
--           p_now    the clock (NULL = now()): created_at, updated_at and the log's time
-- Returns:  TABLE (ord integer, created boolean, callback jsonb): one row per item in item
--           order (ord from 1); callback is mbus.timer_callback_json of the callback
-- Locks:    inserts the new mbus.timer_callbacks and change log rows; an item whose key a
--           concurrent transaction is inserting waits for it (ON CONFLICT on the unique key)
-- Callers:  Python pgmbus.timers.store.create_many (and store.create) via sql/timers.sql
--           'create_many', used by the HTTP service's CreateBatcher (POST /v1/callbacks);
--           mbus.timer_create, mbus.timer_schedule_materialize; the timers bench; users
--           directly (not a public entry point); tests under tests/timers
-- CHANGED (issue 12 items 11-12): the item check; fast_retries cast through numeric (2.0 was
-- accepted by the check and broke the integer cast).
CREATE OR REPLACE FUNCTION mbus.timer_create_many(p_items jsonb, p_now timestamptz DEFAULT NULL)
RETURNS TABLE (ord integer, created boolean, callback jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog
SET jit = off
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_buckets integer;
    v_new bigint[];
    v_limits jsonb := mbus.timer_limits();
    v_bad bigint;
    v_problem text;
BEGIN
    IF jsonb_typeof(p_items) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'items must be a JSON array';
    END IF;
    SELECT t.n, p.problem INTO v_bad, v_problem
    FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
    CROSS JOIN LATERAL (SELECT mbus.timer_item_problem(t.i, v_limits) AS problem) AS p
    WHERE p.problem IS NOT NULL
    ORDER BY t.n
    LIMIT 1;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = CASE WHEN jsonb_array_length(p_items) = 1 THEN v_problem
                           ELSE format('item %s: %s', v_bad, v_problem) END;
    END IF;
    SELECT count(*) INTO v_buckets FROM mbus.timer_buckets;
    WITH items AS (
        SELECT t.n::integer AS n,
               (t.i->>'client_id')::bigint AS client_id,
               t.i->>'group_key' AS group_key,
               t.i->>'event_key' AS event_key,
               (t.i->>'run_at')::timestamptz AS run_at,
               coalesce((t.i->>'originally_run_at')::timestamptz,
                        (t.i->>'run_at')::timestamptz) AS originally_run_at,
               t.i->>'url' AS url,
               coalesce(nullif(t.i->'context', 'null'), '{}') AS context,
               mbus.timer_retry_merge(t.i->'retry') AS retry,  -- checked above
               coalesce((t.i->>'stop_after_delay_s')::float8, 86400) AS stop_after_delay_s,
               (t.i->>'schedule_id')::bigint AS schedule_id
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
    ), ins AS (
        INSERT INTO mbus.timer_callbacks AS c (
            client_id, group_key, event_key, run_at, originally_run_at, url, context,
            fast_retries, retry_kind, retry_delay_s, retry_factor, retry_max_delay_s,
            stop_after_delay_s, bucket_id, schedule_id, created_at, updated_at)
        SELECT DISTINCT ON (i.client_id, i.group_key, i.event_key)
               i.client_id, i.group_key, i.event_key, i.run_at, i.originally_run_at, i.url,
               i.context, (i.retry->>'fast_retries')::numeric::integer, i.retry->>'kind',
               (i.retry->>'delay_s')::float8, (i.retry->>'factor')::float8,
               (i.retry->>'max_delay_s')::float8, i.stop_after_delay_s,
               (abs(hashtextextended(i.group_key || '/' || i.event_key, i.client_id))
                % v_buckets)::integer,
               i.schedule_id, v_now, v_now
        FROM items AS i
        ORDER BY i.client_id, i.group_key, i.event_key, i.n
        ON CONFLICT (client_id, group_key, event_key) DO NOTHING
        RETURNING c.id, c.client_id, c.group_key, c.event_key
    ), logged AS (
        INSERT INTO mbus.timer_change_log
            (at, callback_id, client_id, group_key, event_key, action, new_status)
        SELECT v_now, ins.id, ins.client_id, ins.group_key, ins.event_key, 'create', 'pending'
        FROM ins
    )
    SELECT array_agg(ins.id) INTO v_new FROM ins;

    RETURN QUERY
    WITH items AS (
        SELECT t.n::integer AS n, (t.i->>'client_id')::bigint AS client_id,
               t.i->>'group_key' AS group_key, t.i->>'event_key' AS event_key
        FROM jsonb_array_elements(p_items) WITH ORDINALITY AS t(i, n)
    )
    SELECT i.n,
           c.id = ANY (coalesce(v_new, '{}'))
               AND i.n = min(i.n) OVER (PARTITION BY i.client_id, i.group_key, i.event_key),
           mbus.timer_callback_json(c)
    FROM items AS i
    JOIN mbus.timer_callbacks AS c
      ON (c.client_id, c.group_key, c.event_key) = (i.client_id, i.group_key, i.event_key)
    ORDER BY i.n;
END;
$$;

-- Function: mbus.timer_update(p_client_id, p_group_key, p_event_key, p_run_at,
--                              p_originally_run_at, p_url, p_context, p_i_ensure_pending, p_now)
--
-- Purpose:  Change a callback (NULL = keep). Only a pending callback may change, or a
--           cancelled one when i_ensure_pending is true, which makes it pending again; else
--           MB008. A non-object context is MB005; the new values are checked like a create's
--           (mbus.timer_field_problem: time range, URL form and length, context size): MB006
--           with the reason. A new run_at without originally_run_at sets both. An in-flight
--           claim is dropped, so the change wins over a delivery in progress; the change log
--           row ('update', with old and new values) notifies the dispatchers.
-- Params:   the callback's key, the new values (NULL = keep), p_i_ensure_pending, p_now
-- Returns:  jsonb: mbus.timer_callback_json of the changed callback
-- Locks:    the callback's row (mbus.timer_lock, FOR UPDATE) to commit
-- Callers:  Python pgmbus.timers.store.update via sql/timers.sql 'update' (PATCH
--           /v1/callbacks/{group_key}/{event_key}); tests under tests/timers
-- CHANGED (issue 12 items 11-12): the field check.
CREATE OR REPLACE FUNCTION mbus.timer_update(p_client_id bigint, p_group_key text,
    p_event_key text, p_run_at timestamptz DEFAULT NULL,
    p_originally_run_at timestamptz DEFAULT NULL, p_url text DEFAULT NULL,
    p_context jsonb DEFAULT NULL, p_i_ensure_pending boolean DEFAULT false,
    p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    c mbus.timer_callbacks := mbus.timer_lock(p_client_id, p_group_key, p_event_key);
    n mbus.timer_callbacks;
    v_changes jsonb := '{}';
    v_problem text;
BEGIN
    IF NOT (c.status = 'pending' OR (c.status = 'cancelled' AND p_i_ensure_pending)) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('callback %s/%s is %s; only pending callbacks can be updated',
                             p_group_key, p_event_key, c.status),
            HINT = CASE WHEN c.status = 'cancelled'
                        THEN 'pass i_ensure_pending to update it and make it pending again'
                        ELSE 'finished callbacks cannot change' END;
    END IF;
    IF p_context IS NOT NULL AND jsonb_typeof(p_context) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB005', MESSAGE = 'context must be a JSON object';
    END IF;
    v_problem := mbus.timer_field_problem(mbus.timer_limits(), p_run_at, p_originally_run_at,
                                          p_url, p_context);
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = v_problem;
    END IF;
    UPDATE mbus.timer_callbacks AS t SET
        run_at = coalesce(p_run_at, t.run_at),
        originally_run_at = coalesce(p_originally_run_at, p_run_at, t.originally_run_at),
        url = coalesce(p_url, t.url),
        context = coalesce(p_context, t.context),
        status = 'pending', finished_at = NULL, claimed_by = NULL, claimed_until = NULL,
        updated_at = v_now
    WHERE t.id = c.id
    RETURNING * INTO n;
    IF n.run_at IS DISTINCT FROM c.run_at THEN
        v_changes := v_changes || jsonb_build_object('run_at',
            jsonb_build_array(c.run_at, n.run_at));
    END IF;
    IF n.originally_run_at IS DISTINCT FROM c.originally_run_at THEN
        v_changes := v_changes || jsonb_build_object('originally_run_at',
            jsonb_build_array(c.originally_run_at, n.originally_run_at));
    END IF;
    IF n.url IS DISTINCT FROM c.url THEN
        v_changes := v_changes || jsonb_build_object('url', jsonb_build_array(c.url, n.url));
    END IF;
    IF n.context IS DISTINCT FROM c.context THEN
        v_changes := v_changes || jsonb_build_object('context',
            jsonb_build_array(c.context, n.context));
    END IF;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, new_status, changes)
    VALUES (v_now, c.id, c.client_id, c.group_key, c.event_key, 'update', c.status, n.status,
            v_changes);
    RETURN mbus.timer_callback_json(n);
END;
$$;

-- Function: mbus.timer_next_retry_at(c, p_now)
--
-- Purpose:  When a callback whose attempt failed is tried again: p_now plus the retry delay,
--           which is retry_delay_s for kind 'constant', and retry_delay_s * retry_factor ^
--           (attempts - 1), at most retry_max_delay_s, for 'exponential' (the exponent capped
--           at 60). NULL when the callback has run out of time (the retry would fall after
--           originally_run_at + stop_after_delay_s) or when the delay is beyond 1e9 s (about 31
--           years: never, in practice). Total for any stored value, including rows written
--           before the bounds (1e308, NaN, infinities): the exponential is compared in log
--           space and no interval is built from an unbounded number, so it never raises and
--           never fails the batch of mbus.timer_record. The fast retries of one attempt are the
--           dispatcher's business, not counted here.
-- Params:   c      the callback's row as it was claimed (attempts = the failed attempt)
--           p_now  the time the failure is recorded
-- Returns:  timestamptz: the next run_at; NULL when it should fail instead
-- Locks:    none (computes only)
-- Callers:  mbus.timer_record_batch
-- CHANGED (issue 12 item 11): total (1e308 used to raise "interval out of range").
CREATE OR REPLACE FUNCTION mbus.timer_next_retry_at(c mbus.timer_callbacks, p_now timestamptz)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT CASE
               WHEN NOT (d.secs <= 1e9) THEN NULL
               WHEN c.stop_after_delay_s = 'NaN'::float8 THEN NULL
               WHEN NOT (c.stop_after_delay_s <= 1e10)
                   THEN p_now + make_interval(secs => d.secs)
               WHEN p_now + make_interval(secs => d.secs)
                    <= c.originally_run_at + make_interval(secs => c.stop_after_delay_s)
                   THEN p_now + make_interval(secs => d.secs)
           END
    FROM (SELECT CASE
                     WHEN c.retry_kind = 'constant' THEN c.retry_delay_s
                     WHEN NOT (c.retry_delay_s > 0 AND c.retry_factor >= 1) THEN 'NaN'::float8
                     WHEN ln(c.retry_delay_s) + ln(c.retry_factor)
                          * least(greatest(c.attempts - 1, 0), 60) > 60
                         THEN least(c.retry_max_delay_s, 'Infinity'::float8)
                     ELSE least(c.retry_max_delay_s,
                                c.retry_delay_s * power(c.retry_factor,
                                                        least(greatest(c.attempts - 1, 0), 60)))
                 END AS secs) AS d;
$$;

-- Function: mbus.timer_record_batch(p_results, p_now)
--
-- Purpose:  The set-based recording of delivery results, one statement per table: what
--           mbus.timer_record was before per-result isolation (its body, unchanged). Every call
--           of every result is kept in mbus.timer_attempts; a result is applied only while its
--           claim is current (same dispatcher, same attempt, still pending). By outcome: ok ->
--           'notified'; reject -> 'rejected'; refused -> 'failed'; error -> pending again at
--           mbus.timer_next_retry_at, or 'failed' when out of time. Plan settings as
--           timer_record's (primary-key lookups only, no JIT).
-- Params:   p_results, p_now  as mbus.timer_record
-- Returns:  integer: the number of results applied
-- Locks:    as mbus.timer_record
-- Callers:  mbus.timer_record (the whole batch, then one result at a time after a failure)
-- NEW (issue 12 item 11); file functions/timers/timer_record_batch.sql, in ORDER before
-- timer_record.
CREATE OR REPLACE FUNCTION mbus.timer_record_batch(p_results jsonb, p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
SET jit = off
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_applied integer;
BEGIN
    INSERT INTO mbus.timer_attempts AS a
        (callback_id, attempt, call, dispatcher, started_at, finished_at, outcome,
         status_code, error)
    SELECT (x->>'id')::bigint, (x->>'attempt')::integer, (k->>'call')::integer,
           x->>'dispatcher', (k->>'started_at')::timestamptz, (k->>'finished_at')::timestamptz,
           k->>'outcome', (k->>'status_code')::integer, left(k->>'error', 2000)
    FROM jsonb_array_elements(p_results) AS x, jsonb_array_elements(x->'calls') AS k
    WHERE EXISTS (SELECT FROM mbus.timer_callbacks AS t WHERE t.id = (x->>'id')::bigint)
    ON CONFLICT DO NOTHING;

    WITH r AS (
        SELECT (x->>'id')::bigint AS id, (x->>'attempt')::integer AS attempt,
               x->>'dispatcher' AS dispatcher, x->>'outcome' AS outcome,
               x->'calls'->(jsonb_array_length(x->'calls') - 1) AS last
        FROM jsonb_array_elements(p_results) AS x
    ), cur AS (
        -- only results whose claim is still current count
        SELECT c.id, c.client_id, c.group_key, c.event_key, c.run_at, r.attempt, r.last,
               CASE r.outcome WHEN 'ok' THEN 'notified' WHEN 'reject' THEN 'rejected'
                              WHEN 'refused' THEN 'failed' END AS final,
               CASE WHEN r.outcome NOT IN ('ok', 'reject', 'refused')
                    THEN mbus.timer_next_retry_at(c, v_now) END AS next
        FROM r JOIN mbus.timer_callbacks AS c
          -- "status || ''" keeps the planner off the partial due index (a scan of every
          -- pending callback when stale statistics say there are none): id lookups only
          ON c.id = r.id AND c.status || '' = 'pending' AND c.claimed_by = r.dispatcher
         AND c.attempts = r.attempt
        ORDER BY c.id
        FOR UPDATE OF c
    ), calc AS (
        SELECT cur.*, coalesce(cur.final, CASE WHEN cur.next IS NULL THEN 'failed'
                                               ELSE 'pending' END) AS new_status
        FROM cur
    ), upd AS (
        UPDATE mbus.timer_callbacks AS t SET
            status = calc.new_status,
            run_at = coalesce(calc.next, t.run_at),
            finished_at = CASE WHEN calc.new_status = 'pending' THEN NULL ELSE v_now END,
            claimed_by = NULL, claimed_until = NULL,
            last_status_code = (calc.last->>'status_code')::integer,
            last_error = left(calc.last->>'error', 2000),
            updated_at = v_now
        FROM calc WHERE t.id = calc.id
        RETURNING t.id
    ), logged AS (
        INSERT INTO mbus.timer_change_log
            (at, callback_id, client_id, group_key, event_key, action, old_status, new_status,
             changes)
        SELECT v_now, calc.id, calc.client_id, calc.group_key, calc.event_key,
               CASE WHEN calc.new_status = 'pending' THEN 'retry' ELSE 'status' END,
               'pending', calc.new_status,
               jsonb_build_object('attempt', calc.attempt)
               || CASE WHEN calc.next IS NOT NULL
                       THEN jsonb_build_object('run_at', jsonb_build_array(calc.run_at, calc.next))
                       ELSE '{}' END
        FROM calc
    )
    SELECT count(*) INTO v_applied FROM upd;
    RETURN v_applied;
END;
$$;

-- Function: mbus.timer_record_unrecordable(p_result, p_error, p_now)
--
-- Purpose:  A result that cannot be recorded (its values break a cast or a constraint, even
--           alone) finishes its callback as 'failed' with last_error 'result not recordable:
--           <error>' and a 'status' change log row, when its claim is still current. Nothing is
--           retried from a result that cannot be read: calling the URL again would meet the
--           same values. A result whose id or attempt cannot even be read changes nothing (its
--           claim expires).
-- Params:   p_result  one element of timer_record's p_results
--           p_error   the error and SQLSTATE that recording it alone raised
--           p_now     the clock
-- Returns:  integer: 1 when the callback was finished, else 0
-- Locks:    the callback's row (UPDATE) to commit
-- Callers:  mbus.timer_record
-- NEW (issue 12 item 11); file functions/timers/timer_record_unrecordable.sql, in ORDER before
-- timer_record.
CREATE OR REPLACE FUNCTION mbus.timer_record_unrecordable(p_result jsonb, p_error text,
    p_now timestamptz)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    c mbus.timer_callbacks;
BEGIN
    UPDATE mbus.timer_callbacks AS t SET
        status = 'failed', finished_at = p_now, claimed_by = NULL, claimed_until = NULL,
        last_error = left('result not recordable: ' || p_error, 2000), updated_at = p_now
    WHERE t.id = (p_result->>'id')::bigint AND t.status = 'pending'
      AND t.claimed_by = p_result->>'dispatcher'
      AND t.attempts = (p_result->>'attempt')::integer
    RETURNING * INTO c;
    IF c.id IS NULL THEN
        RETURN 0;
    END IF;
    INSERT INTO mbus.timer_change_log
        (at, callback_id, client_id, group_key, event_key, action, old_status, new_status,
         changes)
    VALUES (p_now, c.id, c.client_id, c.group_key, c.event_key, 'status', 'pending', 'failed',
            jsonb_build_object('attempt', c.attempts, 'error', left(p_error, 500)));
    RETURN 1;
EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
    RETURN 0;  -- not even its id and claim can be read
END;
$$;

-- Function: mbus.timer_record(p_results, p_now)
--
-- Purpose:  Record the dispatcher's delivery results, a batch in one call, isolated per
--           result: the batch is recorded set-based (mbus.timer_record_batch) in a
--           subtransaction; when that fails on a value (class 22 data exception or 23
--           integrity violation: a row stored before the bounds, a result that breaks a cast),
--           each result is recorded alone in its own subtransaction, and one that still fails
--           finishes its own callback as 'failed' with the error
--           (mbus.timer_record_unrecordable). One bad row never fails the others, whoever
--           owns them. Other errors (locks, serialization, resources) are raised as before.
--           The fast path costs one subtransaction per batch; the slow path one per result.
-- Params:   p_results  a JSON array of {id, attempt, dispatcher, outcome, calls: [{call,
--                      started_at, finished_at, outcome, status_code, error}]}, outcome one of
--                      ok, reject, refused, error; errors are cut to 2000 characters
--           p_now      the clock (NULL = now()): finished_at, the retry's base time
-- Returns:  integer: the number of results applied (claims current, plus unrecordable results
--           finished as failed)
-- Locks:    as mbus.timer_record_batch: attempts inserted, the callbacks whose claim is current
--           locked FOR UPDATE in id order and updated; held to commit
-- Callers:  Python pgmbus.timers.store.record via sql/timers.sql 'record', used by the
--           dispatcher (pgmbus.timers.dispatcher, its record loop);
--           tests/timers/test_timers_store.py, tests/timers/test_timers_guard.py
-- CHANGED (issue 12 item 11): per-result isolation; the set-based body moved to
-- timer_record_batch.
CREATE OR REPLACE FUNCTION mbus.timer_record(p_results jsonb, p_now timestamptz DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog
SET jit = off
SET enable_seqscan = off
SET enable_bitmapscan = off
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_applied integer := 0;
    v_state text;
    v_error text;
    x jsonb;
BEGIN
    BEGIN
        RETURN mbus.timer_record_batch(p_results, v_now);
    EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
        IF jsonb_typeof(p_results) IS DISTINCT FROM 'array' THEN
            RAISE;
        END IF;
    END;
    FOR x IN SELECT e FROM jsonb_array_elements(p_results) AS e LOOP
        BEGIN
            v_applied := v_applied + mbus.timer_record_batch(jsonb_build_array(x), v_now);
        EXCEPTION WHEN data_exception OR integrity_constraint_violation THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_error = MESSAGE_TEXT;
            v_applied := v_applied
                + mbus.timer_record_unrecordable(x, v_error || ' (' || v_state || ')', v_now);
        END;
    END LOOP;
    RETURN v_applied;
END;
$$;

-- Function: mbus.timer_schedule_json(s)
--
-- Purpose:  The public JSON shape of a schedule (what the HTTP API returns), now with
--           paused_reason: why the scheduler paused it (NULL when running or paused by its
--           client).
-- Params:   s  a mbus.timer_schedules row
-- Returns:  jsonb {id, schedule_key, group_key, cron, timezone, interval_s, start_at, end_at,
--           url, context, retry, stop_after_delay_s, paused, paused_reason, generated_until,
--           created_at, updated_at}
-- Locks:    none
-- Callers:  mbus.timer_schedule_create, timer_schedule_list, timer_schedule_set_paused
-- CHANGED (issue 12 item 13): paused_reason (needs the column: the ALTER TABLE above first).
CREATE OR REPLACE FUNCTION mbus.timer_schedule_json(s mbus.timer_schedules)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT jsonb_build_object(
        'id', s.id, 'schedule_key', s.schedule_key, 'group_key', s.group_key, 'cron', s.cron,
        'timezone', s.timezone, 'interval_s', s.interval_s, 'start_at', s.start_at,
        'end_at', s.end_at, 'url', s.url, 'context', s.context, 'retry', s.retry,
        'stop_after_delay_s', s.stop_after_delay_s, 'paused', s.paused,
        'paused_reason', s.paused_reason,
        'generated_until', s.generated_until, 'created_at', s.created_at,
        'updated_at', s.updated_at);
$$;

-- Function: mbus.timer_schedule_create(p_client_id, p_schedule_key, p_url, p_cron, p_timezone,
--     p_interval_s, p_group_key, p_context, p_retry, p_stop_after_delay_s, p_start_at, p_end_at,
--     p_now)
--
-- Purpose:  Create a recurring schedule (cron + time zone, or interval_s), idempotent on
--           (client, schedule_key): an existing schedule is returned unchanged with created =
--           false. Checked first, MB006 with the reason: schedule_key 1-200 characters without
--           '/', '@' or control characters, group_key 1-256 without '/' or control characters,
--           exactly one of cron and interval_s, interval_s 1..31622400 (366 days), the cron's
--           form and impossible dates (mbus.timer_cron_problem), a time zone of at most 64
--           characters known to the server, start_at/end_at in range (mbus.timer_time_problem)
--           with end_at after start_at, url, context size and stop_after_delay_s
--           (mbus.timer_field_problem), the retry policy (mbus.timer_retry_problem). Whether a
--           cron fires at all beyond what SQL can tell is checked by the Python API and the
--           HTTP API (croniter) before calling this, and by the scheduler at run time.
-- Params:   the schedule's fields (see the HTTP API); p_now the clock (NULL = now())
-- Returns:  created boolean, schedule jsonb (mbus.timer_schedule_json)
-- Locks:    inserts the mbus.timer_schedules row (waits on a concurrent insert of the key)
-- Callers:  Python pgmbus.timers.store.create_schedule via sql/timers.sql 'schedule_create'
--           (POST /v1/schedules); tests under tests/timers
-- CHANGED (issue 12 items 11-13): the checks (were CHECK violations or accepted).
CREATE OR REPLACE FUNCTION mbus.timer_schedule_create(p_client_id bigint, p_schedule_key text,
    p_url text, p_cron text DEFAULT NULL, p_timezone text DEFAULT 'UTC',
    p_interval_s integer DEFAULT NULL, p_group_key text DEFAULT NULL,
    p_context jsonb DEFAULT '{}', p_retry jsonb DEFAULT NULL,
    p_stop_after_delay_s double precision DEFAULT NULL, p_start_at timestamptz DEFAULT NULL,
    p_end_at timestamptz DEFAULT NULL, p_now timestamptz DEFAULT NULL,
    OUT created boolean, OUT schedule jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    v_problem text;
    s mbus.timer_schedules;
BEGIN
    IF p_schedule_key IS NULL OR length(p_schedule_key) NOT BETWEEN 1 AND 200
       OR p_schedule_key ~ '[/@[:cntrl:]]' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'schedule_key must be 1 to 200 characters, without "/", "@" and control '
                      'characters';
    END IF;
    IF p_group_key IS NOT NULL AND (length(p_group_key) NOT BETWEEN 1 AND 256
                                    OR p_group_key ~ '[/[:cntrl:]]') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'group_key must be 1 to 256 characters, without "/" and control characters';
    END IF;
    IF (p_cron IS NULL) = (p_interval_s IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'a schedule needs exactly one of cron and interval_s';
    END IF;
    IF p_interval_s IS NOT NULL AND p_interval_s NOT BETWEEN 1 AND 31622400 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'interval_s must be from 1 to 31622400 (366 days)';
    END IF;
    v_problem := coalesce(
        mbus.timer_cron_problem(p_cron),
        CASE WHEN length(p_timezone) > 64 THEN 'timezone must be at most 64 characters' END,
        mbus.timer_time_problem('start_at', p_start_at),
        mbus.timer_time_problem('end_at', p_end_at),
        mbus.timer_field_problem(mbus.timer_limits(), p_url => p_url,
                                 p_context => coalesce(p_context, '{}'),
                                 p_stop_after_delay_s => p_stop_after_delay_s),
        mbus.timer_retry_problem(p_retry));
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = v_problem;
    END IF;
    IF p_end_at IS NOT NULL AND p_end_at <= coalesce(p_start_at, v_now) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'end_at must be after start_at';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_timezone_names WHERE name = coalesce(p_timezone, 'UTC')) THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown time zone %L', p_timezone);
    END IF;
    INSERT INTO mbus.timer_schedules AS t (client_id, schedule_key, group_key, cron, timezone,
        interval_s, start_at, end_at, url, context, retry, stop_after_delay_s, generated_until,
        created_at, updated_at)
    VALUES (p_client_id, p_schedule_key, coalesce(p_group_key, p_schedule_key), p_cron,
            coalesce(p_timezone, 'UTC'), p_interval_s, coalesce(p_start_at, v_now), p_end_at,
            p_url, coalesce(p_context, '{}'), mbus.timer_retry_policy(p_retry),
            coalesce(p_stop_after_delay_s, 86400), coalesce(p_start_at, v_now), v_now, v_now)
    ON CONFLICT (client_id, schedule_key) DO NOTHING
    RETURNING * INTO s;
    created := s.id IS NOT NULL;
    IF NOT created THEN
        SELECT * INTO s FROM mbus.timer_schedules AS t
        WHERE t.client_id = p_client_id AND t.schedule_key = p_schedule_key;
    END IF;
    schedule := mbus.timer_schedule_json(s);
END;
$$;

-- Function: mbus.timer_schedule_set_paused(p_client_id, p_schedule_key, p_paused, p_now)
--
-- Purpose:  Pause a schedule (its generated, not yet claimed pending callbacks are removed)
--           or resume it (generation restarts from now; missed occurrences are not made up; the
--           reason of a pause by the scheduler is cleared). MB002 when there is no such
--           schedule.
-- Params:   the client, the schedule's key, p_paused, p_now (NULL = now())
-- Returns:  jsonb: mbus.timer_schedule_json of the schedule
-- Locks:    the schedule's row FOR UPDATE to commit
-- Callers:  Python pgmbus.timers.store.set_schedule_paused via sql/timers.sql
--           'schedule_set_paused' (POST /v1/schedules/{key}/pause and /resume)
-- CHANGED (issue 12 item 13): resume clears paused_reason.
CREATE OR REPLACE FUNCTION mbus.timer_schedule_set_paused(p_client_id bigint,
    p_schedule_key text, p_paused boolean, p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
    s mbus.timer_schedules;
BEGIN
    SELECT * INTO s FROM mbus.timer_schedules AS t
    WHERE t.client_id = p_client_id AND t.schedule_key = p_schedule_key FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('no schedule %L', p_schedule_key);
    END IF;
    IF p_paused AND NOT s.paused THEN
        PERFORM mbus.timer_schedule_drop_pending(s.id, v_now);
        UPDATE mbus.timer_schedules AS t SET paused = true, updated_at = v_now
        WHERE t.id = s.id RETURNING * INTO s;
    ELSIF NOT p_paused AND s.paused THEN
        UPDATE mbus.timer_schedules AS t
        SET paused = false, paused_reason = NULL, generated_until = greatest(v_now, t.start_at),
            updated_at = v_now
        WHERE t.id = s.id RETURNING * INTO s;
    END IF;
    RETURN mbus.timer_schedule_json(s);
END;
$$;

-- Function: mbus.timer_schedule_pause_broken(p_schedule_id, p_reason, p_now)
--
-- Purpose:  The scheduler could not compute the schedule's next runs (a cron that never fires,
--           stored through SQL or before the checks) or create them (a value now over a
--           limit): pause it with the reason (paused_reason, at most 500 characters, shown by
--           the API) and drop its generated pending callbacks, instead of failing, and
--           logging, every pass. The client sees why and resumes it like any paused schedule.
--           No-op when the schedule is gone or paused already.
-- Params:   p_schedule_id, p_reason, p_now (NULL = now())
-- Returns:  void
-- Locks:    the schedule's row (UPDATE) to commit
-- Callers:  Python pgmbus.timers.store.pause_broken_schedule via sql/timers.sql
--           'schedule_pause_broken', used by pgmbus.timers.scheduler.generate
-- NEW (issue 12 item 13); file functions/timers/timer_schedule_pause_broken.sql, in ORDER after
-- timer_schedule_drop_pending.
CREATE OR REPLACE FUNCTION mbus.timer_schedule_pause_broken(p_schedule_id bigint,
    p_reason text, p_now timestamptz DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now timestamptz := coalesce(p_now, now());
BEGIN
    UPDATE mbus.timer_schedules AS t
    SET paused = true, paused_reason = left(coalesce(p_reason, 'unknown'), 500),
        updated_at = v_now
    WHERE t.id = p_schedule_id AND NOT t.paused;
    IF FOUND THEN
        PERFORM mbus.timer_schedule_drop_pending(p_schedule_id, v_now);
    END IF;
END;
$$;

-- Function: mbus.timer_clean(p_ttl_days, p_now)
--
-- Purpose:  Delete finished callbacks (status <> 'pending') whose run_at is older than
--           ttl_days, with their attempts, and change log rows older than ttl_days; mark the
--           'clean' job as run. ttl_days must be from 0 to 36500 (MB006; a larger one made the
--           cut-off time overflow).
-- Params:   p_ttl_days, p_now (NULL = now())
-- Returns:  callbacks bigint, changes bigint: the rows deleted
-- Locks:    deletes; the timer_jobs row
-- Callers:  Python pgmbus.timers.store.clean ('clean'), mbus.timer_clean_if_due
-- CHANGED (issue 12 item 11): the bound.
CREATE OR REPLACE FUNCTION mbus.timer_clean(p_ttl_days integer DEFAULT 30,
    p_now timestamptz DEFAULT NULL, OUT callbacks bigint, OUT changes bigint)
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_before timestamptz;
BEGIN
    IF p_ttl_days IS NULL OR p_ttl_days NOT BETWEEN 0 AND 36500 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = 'ttl_days must be from 0 to 36500';
    END IF;
    v_before := coalesce(p_now, now()) - make_interval(days => p_ttl_days);
    WITH gone AS (
        DELETE FROM mbus.timer_callbacks AS c
        WHERE c.status <> 'pending' AND c.run_at < v_before RETURNING 1)
    SELECT count(*) INTO callbacks FROM gone;
    WITH gone AS (
        DELETE FROM mbus.timer_change_log AS l WHERE l.at < v_before RETURNING 1)
    SELECT count(*) INTO changes FROM gone;
    UPDATE mbus.timer_jobs AS j SET last_run_at = coalesce(p_now, now()) WHERE j.name = 'clean';
END;
$$;

-- PUBLIC may execute none of the timer functions (see 0001's restrict_public_execute).
SELECT mbus.restrict_public_execute();
