-- Function: mbus.configure_group(name, topics, on_busy, max_lag, max_attempts, retry_backoff,
--           ordered)
--
-- Purpose:  Change a group's options; a NULL argument leaves that option unchanged. topics: only
--           these are delivered ('{}' = all); on_busy: 'wait' (a second reader waits for the
--           first one's transaction) or 'skip' (it gets nothing); max_lag: maintain() expires a
--           group with unread events whose position is older (zero or negative: no limit);
--           max_attempts, retry_backoff: retry_event()'s policy; ordered: a transaction's events
--           only once every transaction that started before it has ended (batches in
--           transaction-id order; an open transaction holds back all that started after it).
--           Works on expired groups too (seek revives them).
-- Params:   name           the group's name
--           topics         the topics to deliver (text[]; '{}' = all; NULL = unchanged)
--           on_busy        'wait' or 'skip' (NULL = unchanged)
--           max_lag        the lag after which maintain expires the group (interval; <= 0 = none)
--           max_attempts   the attempts before an event goes to the dead letters (integer >= 1)
--           retry_backoff  the first retry's delay, doubled per attempt (interval >= 0)
--           ordered        deliver in transaction-id order (boolean)
-- Returns:  void; MB002 when the group does not exist, MB006 for a bad on_busy, max_attempts
--           < 1 or a negative retry_backoff
-- Locks:    the group's row in mbus.stream_groups (UPDATE), held to commit
-- Calls:    none
-- Tables:   mbus.stream_groups
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
    IF max_attempts < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('max_attempts must be >= 1, not %s', max_attempts);
    END IF;
    IF retry_backoff < interval '0' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('retry_backoff must not be negative, not %s', retry_backoff);
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
