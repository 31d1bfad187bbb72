-- Function: mbus.timer_item_problem(p_item, p_limits)
--
-- Purpose:  Why an item of mbus.timer_create_many is refused, or NULL: client_id (and
--           schedule_id, when given) a whole number from 1 to bigint's maximum, group_key and
--           event_key of 1-256 characters without '/' or control characters, a string url, an
--           object (or null) context, stop_after_delay_s a number (or null) in 0..31622400,
--           run_at and originally_run_at that read as timestamps, a retry policy
--           (mbus.timer_retry_problem, when given) and mbus.timer_field_problem. One typed reason
--           instead of CHECK and cast errors (23514, 22P02, 22007, 22003). Whether the client and
--           schedule exist is mbus.timer_create_many's check (MB002).
-- Params:   p_item    one element of p_items
--           p_limits  mbus.timer_limits() of the statement
-- Returns:  text: the reason, or NULL
-- Locks:    none (computes only)
-- Calls:    mbus.timer_field_problem, mbus.timer_retry_problem
-- Tables:   none
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
    IF jsonb_typeof(p_item->'client_id') IS DISTINCT FROM 'number'
       OR p_item->>'client_id' !~ '^[1-9][0-9]{0,18}$'  -- as its ::bigint reads it: 1.0 fails
       OR (p_item->>'client_id')::numeric > 9223372036854775807 THEN
        RETURN 'client_id must be a whole number from 1 to 9223372036854775807';
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
    IF jsonb_typeof(p_item->'schedule_id') NOT IN ('number', 'null')
       OR p_item->>'schedule_id' !~ '^[1-9][0-9]{0,18}$'  -- as its ::bigint reads it: 1.0 fails
       OR (p_item->>'schedule_id')::numeric > 9223372036854775807 THEN
        RETURN 'schedule_id must be a whole number from 1 to 9223372036854775807';
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
