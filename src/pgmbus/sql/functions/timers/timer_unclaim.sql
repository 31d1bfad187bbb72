-- Function: mbus.timer_unclaim(p_dispatcher, p_ids, p_attempts)
--
-- Purpose:  Give back claims that were never called. A dispatcher that could not start a call
--           while a full timeout of its claim was left (it was overloaded), or that stops with
--           callbacks claimed ahead, hands them back at once instead of letting the claim
--           expire (which delays them by the claim's length). The attempt number is given back
--           too: nobody was called with it. Only the claim's own dispatcher and attempt match,
--           so a claim that already expired and was taken by another dispatcher is untouched.
-- Params:   p_dispatcher  the dispatcher that holds the claims (text)
--           p_ids         the callback ids (bigint[])
--           p_attempts    the claimed attempt of each, in the same order (integer[])
-- Returns:  integer: the number of claims given back
-- Locks:    row locks of the matching callbacks (UPDATE; waits for a transaction holding
--           one), held to commit
-- Calls:    none
-- Tables:   mbus.timer_callbacks
CREATE OR REPLACE FUNCTION mbus.timer_unclaim(p_dispatcher text, p_ids bigint[], p_attempts integer[])
RETURNS integer
LANGUAGE sql
SET search_path = pg_catalog
SET jit = off
AS $$
    WITH r AS (
        SELECT u.id, u.attempt FROM unnest(p_ids, p_attempts) AS u(id, attempt)
    ), given AS (
        UPDATE mbus.timer_callbacks AS c
        SET attempts = c.attempts - 1, claimed_by = NULL, claimed_until = NULL
        FROM r
        WHERE c.id = r.id AND c.attempts = r.attempt AND c.claimed_by = p_dispatcher
          AND c.status = 'pending'
        RETURNING c.id
    )
    SELECT count(*)::integer FROM given;
$$;
