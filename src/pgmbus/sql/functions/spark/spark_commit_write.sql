-- Function: mbus.spark_commit_write(p_sink, p_query_id, p_batch_id, p_write_id, p_tokens, ...)
--
-- Purpose:  The driver's commit of one Spark write (a batch write or one micro-batch), in one
--           transaction: takes the write's advisory lock exclusively (waits for staging tasks);
--           claims (sink, query_id, batch_id) in the ledger, returning -1 and publishing nothing
--           for a batch committed before; kind 'topic' flips the reported attempts' pending rows
--           (p_tokens) so every reader's next snapshot sees their events, kind 'queue' posts the
--           staged rows per queue in (token, seq) order; MB008 (ledger row rolled back, Spark
--           re-runs the batch) when it finds fewer or more rows than reported. Then it wakes
--           listeners, drops the write's staged rows and runs mbus.spark_clean_staged.
-- Params:   p_sink      the sink's name (text)
--           p_query_id  the streaming query's id, or the write id for a batch write (text)
--           p_batch_id  the micro-batch id (0 for a batch write)
--           p_write_id  the write's id, under which its tasks staged (text)
--           p_tokens    the tokens of the task attempts Spark reported successful (text[])
--           p_expected  the rows those attempts reported staging (bigint)
--           p_kind      'topic' or 'queue' (MB006 otherwise)
--           (MB006 also for a NULL write id, tokens or expected, or expected < 0, and, from
--           mbus.spark_claim_batch, for a bad sink, query id or batch id)
-- Returns:  bigint: the number of rows published; -1 when the batch was committed before
-- Locks:    pg_advisory_xact_lock(mbus._spark_write_lock(p_write_id)), held to commit (waits
--           for staging tasks); the ledger row (waits for a concurrent commit of the same
--           batch); those of mbus._spark_settle, or the locks of mbus.post_batch on each target
--           queue; row locks of the staged and spark_writes rows it deletes; those of
--           mbus.spark_clean_staged; a pg_notify at commit for topics
-- Calls:    mbus._spark_settle, mbus._spark_write_lock, mbus.notify, mbus.post_batch,
--           mbus.spark_claim_batch, mbus.spark_clean_staged, mbus.spark_discard_write
-- Tables:   mbus.spark_pending, mbus.spark_staged
-- Design:   docs/DESIGN.md#spark_commit_write-and-spark_lock_stage-the-steps-of-a-commit
CREATE OR REPLACE FUNCTION mbus.spark_commit_write(
    p_sink text, p_query_id text, p_batch_id bigint, p_write_id text,
    p_tokens text[], p_expected bigint, p_kind text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_found  bigint;
    v_tokens bigint;
    v_target text;
BEGIN
    IF p_write_id IS NULL OR p_tokens IS NULL OR p_expected IS NULL OR p_expected < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'write_id, tokens and expected (0 or more) are required';
    END IF;
    IF p_kind IS NULL OR p_kind NOT IN ('topic', 'queue') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown write kind %L (topic or queue)', p_kind);
    END IF;
    PERFORM pg_advisory_xact_lock(mbus._spark_write_lock(p_write_id));
    IF NOT mbus.spark_claim_batch(p_sink, p_query_id, p_batch_id, p_expected) THEN
        PERFORM mbus.spark_discard_write(p_write_id);  -- drops pending events too
        RETURN -1;
    END IF;
    IF p_kind = 'topic' THEN
        -- The tasks copied their events into mbus.events already, each attempt in its own
        -- transaction recorded in mbus.spark_pending. Check the reported attempts are all
        -- there with the rows they reported (no scan of the rows: one pending row per task).
        SELECT count(*), coalesce(sum(p.row_count), 0) INTO v_tokens, v_found
        FROM mbus.spark_pending AS p
        WHERE p.write_id = p_write_id AND p.token = ANY (p_tokens);
        IF v_tokens <> (SELECT count(DISTINCT t) FROM unnest(p_tokens) AS t) THEN
            v_found := -v_found - 1;  -- an attempt is missing: refused below, whatever the sum
        END IF;
    ELSE
        SELECT count(*) INTO v_found
        FROM mbus.spark_staged WHERE write_id = p_write_id AND token = ANY (p_tokens);
    END IF;
    IF v_found <> p_expected THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('write %s: %s staged rows found, the tasks reported %s',
                             p_write_id, greatest(v_found, 0), p_expected),
            HINT = 'staged rows were lost (server crash, or dropped by spark_clean_staged '
                   'after spark.staged_ttl); Spark must re-run the batch';
    END IF;
    IF p_kind = 'topic' THEN
        -- The flip: the reported attempts' events become visible to the next snapshot of every
        -- reader; other attempts' events are deleted first.
        PERFORM mbus._spark_settle(p_write_id, p_tokens);
        PERFORM mbus.notify();
    ELSE
        FOR v_target IN
            SELECT DISTINCT s.target FROM mbus.spark_staged AS s
            WHERE s.write_id = p_write_id AND s.token = ANY (p_tokens)
        LOOP
            PERFORM mbus.post_batch(
                v_target,
                ARRAY(SELECT s.payload FROM mbus.spark_staged AS s
                      WHERE s.write_id = p_write_id AND s.token = ANY (p_tokens)
                        AND s.target = v_target ORDER BY s.token, s.seq),
                ARRAY(SELECT s.headers FROM mbus.spark_staged AS s
                      WHERE s.write_id = p_write_id AND s.token = ANY (p_tokens)
                        AND s.target = v_target ORDER BY s.token, s.seq));
        END LOOP;
    END IF;
    PERFORM mbus.spark_discard_write(p_write_id);
    PERFORM mbus.spark_clean_staged();
    RETURN v_found;
END;
$$;
