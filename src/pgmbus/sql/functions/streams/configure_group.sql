-- Function: mbus.configure_group(name, topics, on_busy, max_lag, max_attempts, retry_backoff, ordered)
--
-- Purpose:  configure_group(name, ...): change a group's options (null leaves one unchanged).
--             topics: only these topics are delivered ('{}' means all); on_busy: 'wait' (a second reader
--             waits for the first one's transaction) or 'skip' (it gets nothing); max_lag: a group with
--             unread events older than this is expired by maintain(); max_attempts and retry_backoff:
--             the retry policy of retry_event(); ordered: deliver a transaction's events only once every
--             transaction that started before it has ended (the Wiki PubSub seed's option of refusing
--             out-of-order events), so batches come in transaction-id order; the price is that an open
--             transaction then holds back everything that started after it (the xmin watermark).
-- Params:   name text FILL
--           topics text[] DEFAULT NULL FILL
--           on_busy text DEFAULT NULL FILL
--           max_lag interval DEFAULT NULL FILL
--           max_attempts integer DEFAULT NULL FILL
--           retry_backoff interval DEFAULT NULL FILL
--           ordered boolean DEFAULT NULL FILL
-- Returns:  void
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE FUNCTION mbus.configure_group(name text, topics text[] DEFAULT NULL,
                                     on_busy text DEFAULT NULL, max_lag interval DEFAULT NULL,
                                     max_attempts integer DEFAULT NULL,
                                     retry_backoff interval DEFAULT NULL,
                                     ordered boolean DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    IF on_busy IS NOT NULL AND on_busy NOT IN ('wait', 'skip') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('on_busy must be ''wait'' or ''skip'', not %L', on_busy);
    END IF;
    UPDATE mbus.stream_groups AS g
    SET topics = CASE WHEN configure_group.topics IS NULL THEN g.topics
                      WHEN cardinality(configure_group.topics) = 0 THEN NULL
                      ELSE configure_group.topics END,
        on_busy = coalesce(configure_group.on_busy, g.on_busy),
        max_lag = CASE WHEN configure_group.max_lag IS NULL THEN g.max_lag
                       WHEN configure_group.max_lag <= interval '0' THEN NULL
                       ELSE configure_group.max_lag END,
        max_attempts = coalesce(configure_group.max_attempts, g.max_attempts),
        retry_backoff = coalesce(configure_group.retry_backoff, g.retry_backoff),
        ordered = coalesce(configure_group.ordered, g.ordered)
    WHERE g.name = configure_group.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB002',
            MESSAGE = format('consumer group %L does not exist', configure_group.name);
    END IF;
END;
$$;
