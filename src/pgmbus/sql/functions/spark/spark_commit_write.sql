-- Function: mbus.spark_commit_write(p_sink, p_query_id, p_batch_id, p_write_id, p_tokens, ...)
--
-- Purpose:  The driver's commit of one Spark write (a batch write, or one micro-batch of a
--           stream), in one transaction:
--             1. takes the write's advisory lock exclusively: it waits for tasks still staging,
--                and the cleanup (spark_clean_staged) never drops rows it is publishing;
--             2. claims (sink, query_id, batch_id) in the ledger (mbus.spark_claim_batch);
--                when the batch was committed before (a replay after a driver crash) it drops
--                the write's staged rows and returns -1: nothing is published again;
--             3. publishes the staged rows of the successful task attempts (p_tokens): kind
--                'topic' as stream events (target = topic), one INSERT per token in token then
--                seq order, read in that order from the index (write_id, token, seq) with
--                sorting off (allowed a sort, the planner chose a sequential scan and an
--                on-disk sort of the whole write), counting the rows from the INSERTs (no count
--                scan); kind 'queue' counts them, then posts them per target queue
--                (mbus.post_batch) in token, seq order;
--             4. raises MB008 when fewer or more rows are found than the tasks reported (rows
--                lost in a server crash, the staged table being unlogged, or dropped by the
--                cleanup after spark.staged_ttl), rolling back the inserts and the ledger row:
--                Spark re-runs the batch;
--             5. wakes stream listeners (mbus.notify, kind 'topic'), drops every staged row of
--                the write, including those of failed or duplicate attempts, and runs
--                mbus.spark_clean_staged, so abandoned writes go away as long as anything
--                commits Spark writes.
-- Params:   p_sink      the sink's name (text)
--           p_query_id  the streaming query's id, or the write id for a batch write (text)
--           p_batch_id  the micro-batch id (0 for a batch write)
--           p_write_id  the write's id, under which its tasks staged (text)
--           p_tokens    the tokens of the task attempts Spark reported successful (text[])
--           p_expected  the rows those attempts reported staging (bigint)
--           p_kind      'topic' or 'queue' (MB006 otherwise)
-- Returns:  bigint: the number of rows published; -1 when the batch was committed before
-- Locks:    pg_advisory_xact_lock(mbus._spark_write_lock(p_write_id)), held to commit (waits
--           for staging tasks); the ledger row (waits for a concurrent commit of the same
--           batch); inserts into mbus.events, or the locks of mbus.post_batch on each target
--           queue; row locks of the staged and spark_writes rows it deletes; those of
--           mbus.spark_clean_staged; a pg_notify at commit for topics
-- Callers:  Python pgmbus.spark.writer.commit_write via sql/spark.sql 'commit_write'
--           (PgmbusWriter.commit and PgmbusStreamWriter.commit, the driver's commit of a
--           format "pgmbus" write); users directly (not a public entry point; the documented
--           SQL for other languages); tests under tests/spark
CREATE OR REPLACE FUNCTION mbus.spark_commit_write(
    p_sink text, p_query_id text, p_batch_id bigint, p_write_id text,
    p_tokens text[], p_expected bigint, p_kind text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_found  bigint;
    v_n      bigint;
    v_token  text;
    v_sort   text;
    v_target text;
BEGIN
    IF p_kind NOT IN ('topic', 'queue') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown write kind %L (topic or queue)', p_kind);
    END IF;
    PERFORM pg_advisory_xact_lock(mbus._spark_write_lock(p_write_id));
    IF NOT mbus.spark_claim_batch(p_sink, p_query_id, p_batch_id, p_expected) THEN
        PERFORM mbus.spark_discard_write(p_write_id);
        RETURN -1;
    END IF;
    IF p_kind = 'topic' THEN
        -- One set-based INSERT per task attempt, in task then row order, read in that order
        -- from the index (no sort: with sorting allowed, the planner prefers a sequential scan
        -- and an on-disk sort of the whole write). mbus.events' constraints check the topic
        -- and headers; listeners are woken as publish() wakes them.
        PERFORM mbus._check_log();
        v_found := 0;
        v_sort := current_setting('enable_sort');
        PERFORM set_config('enable_sort', 'off', true);
        FOR v_token IN SELECT DISTINCT t FROM unnest(p_tokens) AS t ORDER BY t LOOP
            INSERT INTO mbus.events (topic, key, payload, headers)
            SELECT s.target, s.key, s.payload, s.headers
            FROM mbus.spark_staged AS s
            WHERE s.write_id = p_write_id AND s.token = v_token
            ORDER BY s.seq;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            v_found := v_found + v_n;
        END LOOP;
        PERFORM set_config('enable_sort', v_sort, true);
    ELSE
        SELECT count(*) INTO v_found
        FROM mbus.spark_staged WHERE write_id = p_write_id AND token = ANY (p_tokens);
    END IF;
    IF v_found <> p_expected THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('write %s: %s staged rows found, the tasks reported %s',
                             p_write_id, v_found, p_expected),
            HINT = 'staged rows were lost (server crash, or dropped by spark_clean_staged '
                   'after spark.staged_ttl); Spark must re-run the batch';
    END IF;
    IF p_kind = 'topic' THEN
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
