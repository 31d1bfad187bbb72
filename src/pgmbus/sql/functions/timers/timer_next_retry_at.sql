-- Function: mbus.timer_next_retry_at(c, p_now)
--
-- Purpose:  timer_next_retry_at(c, now): when a failed attempt is retried, or NULL when the callback has
--           run out of time (the retry would fall after originally_run_at + stop_after_delay_s).
--           constant: delay_s; exponential: delay_s * factor^(attempts - 1), at most max_delay_s.
-- Params:   c mbus.timer_callbacks FILL
--           p_now timestamptz FILL
-- Returns:  timestamptz
-- Locks:    FILL
-- Callers:  FILL
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
