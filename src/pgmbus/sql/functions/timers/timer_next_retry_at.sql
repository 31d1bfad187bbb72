-- Function: mbus.timer_next_retry_at(c, p_now)
--
-- Purpose:  When a callback whose attempt failed is tried again: p_now plus retry_delay_s
--           ('constant') or retry_delay_s * retry_factor ^ (attempts - 1), at most
--           retry_max_delay_s, the exponent capped at 60 ('exponential'). NULL when the retry
--           would fall after originally_run_at + stop_after_delay_s or the delay is beyond 1e9 s.
--           Total for any stored value (1e308, NaN, infinities): it never raises, so never fails
--           the batch of mbus.timer_record. The fast retries of one attempt are the dispatcher's
--           business, not counted here.
-- Params:   c      the callback's row as it was claimed (attempts = the failed attempt)
--           p_now  the time the failure is recorded
-- Returns:  timestamptz: the next run_at; NULL when it should fail instead
-- Locks:    none (computes only)
-- Calls:    none
-- Tables:   mbus.timer_callbacks
-- Design:   docs/DESIGN.md#timer_next_retry_at-total-for-any-stored-value
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
