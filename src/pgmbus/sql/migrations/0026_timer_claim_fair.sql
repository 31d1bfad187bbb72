-- timers: fair claims. mbus.timer_claim gives each client with claimable callbacks an equal
-- share of a batch (each client's own due callbacks in (run_at, id) order), so one client's
-- backlog cannot fill every batch and hold back another client's due callbacks.
--   * timer_callbacks_client_due: each client's pending callbacks in (run_at, id) order, the
--     per-client range scan of the claim (and its probe for the clients with due callbacks).
--   * mbus.timer_claim gains p_skip_clients (the clients whose callbacks the dispatcher holds
--     enough of already); its old signature is dropped here and made again by its file.

CREATE INDEX timer_callbacks_client_due ON mbus.timer_callbacks (client_id, run_at, id)
    INCLUDE (bucket_id) WHERE status = 'pending';

DROP FUNCTION IF EXISTS mbus.timer_claim(text, integer[], integer, double precision, timestamptz,
    double precision, timestamptz, bigint);
