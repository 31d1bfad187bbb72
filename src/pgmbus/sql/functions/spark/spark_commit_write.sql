-- Function: mbus.spark_commit_write(p_sink, p_query_id, p_batch_id, p_write_id, p_tokens, p_expected, p_kind)
--
-- Purpose:  spark_commit_write: as in the first spark migration, except that
--             * it takes the write's advisory lock (the cleanup never drops rows it is publishing);
--             * for topics, rows are read in order from the index (write_id, token, seq), one INSERT per
--               task attempt, and the row count comes from the INSERTs themselves (no count scan, no
--               sort); a mismatch raises MB008, which rolls the INSERTs and the ledger row back;
--             * it ends by running mbus.spark_clean_staged, so abandoned staged rows go away without a
--               separate job as long as anything commits Spark writes.
-- Params:   p_sink text FILL
--           p_query_id text FILL
--           p_batch_id bigint FILL
--           p_write_id text FILL
--           p_tokens text[] FILL
--           p_expected bigint FILL
--           p_kind text FILL
-- Returns:  bigint
-- Locks:    FILL
-- Callers:  FILL
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
