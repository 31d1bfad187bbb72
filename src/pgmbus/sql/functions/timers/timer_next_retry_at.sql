-- Function: mbus.timer_next_retry_at(c, p_now)
--
-- Purpose:  When a callback whose attempt failed is tried again: p_now plus the retry delay,
--           which is retry_delay_s for kind 'constant', and retry_delay_s * retry_factor ^
--           (attempts - 1), at most retry_max_delay_s, for 'exponential' (the exponent is
--           capped at 60 to stay in range). NULL when the callback has run out of time: the
--           retry would fall after originally_run_at + stop_after_delay_s. The fast retries of
--           one attempt are the dispatcher's business, not counted here.
-- Params:   c      the callback's row as it was claimed (attempts = the failed attempt)
--           p_now  the time the failure is recorded
-- Returns:  timestamptz: the next run_at; NULL when it should fail instead
-- Locks:    none (computes only)
-- Callers:  mbus.timer_record
CREATE OR REPLACE FUNCTION mbus.timer_next_retry_at(c mbus.timer_callbacks, p_now timestamptz)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT CASE WHEN t.next <= c.originally_run_at
                              + make_interval(secs => c.stop_after_delay_s)
                THEN t.next END
    FROM (SELECT p_now + make_interval(secs =>
              CASE c.retry_kind
                  WHEN 'constant' THEN c.retry_delay_s
                  ELSE least(c.retry_max_delay_s,
                             c.retry_delay_s * power(c.retry_factor,
                                                     least(greatest(c.attempts - 1, 0), 60)))
              END) AS next) AS t;
$$;
