-- spark: what the PySpark data source and the pipeline jobs keep in the database.
--   * mbus.spark_batches: the sink ledger, one row per (sink, query id, batch id) whose output
--     is in the database; written in the same transaction as the output, so a replayed batch
--     finds its row and writes nothing (exactly once per batch);
--   * mbus.spark_staged: rows written by Spark tasks, invisible to consumers until the driver's
--     commit publishes the rows of the successful task attempts (mbus.spark_commit_write);
--   * mbus.stats_user_edits, mbus.stats_object_activity: the tables of the stats job.

CREATE TABLE mbus.spark_batches (
    sink         text        NOT NULL CHECK (sink <> ''),
    query_id     text        NOT NULL CHECK (query_id <> ''),
    batch_id     bigint      NOT NULL CHECK (batch_id >= 0),
    row_count    bigint      NOT NULL DEFAULT 0,
    committed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (sink, query_id, batch_id)
);

COMMENT ON TABLE mbus.spark_batches IS
    'Sink ledger: the Spark micro-batches whose output is committed (exactly once per batch).';

-- Unlogged: staged rows are transient. A crash of the server loses them, and the commit then
-- finds fewer rows than the tasks reported and refuses (Spark re-runs the batch).
CREATE UNLOGGED TABLE mbus.spark_staged (
    write_id   text        NOT NULL,
    token      text        NOT NULL,
    seq        integer     NOT NULL,
    target     text,
    key        text,
    payload    jsonb       NOT NULL,
    headers    jsonb,
    staged_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX spark_staged_write ON mbus.spark_staged (write_id, token);

COMMENT ON TABLE mbus.spark_staged IS
    'Rows written by Spark tasks, published by the driver''s commit (or dropped on abort).';

-- spark_claim_batch(sink, query_id, batch_id, row_count): record a batch in the ledger.
-- Returns true when the caller's transaction now owns the batch (write its output and commit),
-- false when the batch was committed before (write nothing). Concurrent claimers of one batch
-- wait for each other on the primary key, so at most one commits output.
CREATE FUNCTION mbus.spark_claim_batch(
    p_sink text, p_query_id text, p_batch_id bigint, p_row_count bigint DEFAULT 0)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_inserted integer;
BEGIN
    INSERT INTO mbus.spark_batches (sink, query_id, batch_id, row_count)
    VALUES (p_sink, p_query_id, p_batch_id, coalesce(p_row_count, 0))
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted = 1;
END;
$$;

-- spark_discard_write(write_id): drop every staged row of a write (all task attempts).
CREATE FUNCTION mbus.spark_discard_write(p_write_id text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_n bigint;
BEGIN
    DELETE FROM mbus.spark_staged WHERE write_id = p_write_id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;

-- spark_commit_write(sink, query_id, batch_id, write_id, tokens, expected, kind):
-- the driver's commit of one Spark write (a batch write or one micro-batch). In one transaction:
-- claim (sink, query_id, batch_id) in the ledger; publish the staged rows of the successful task
-- attempts (tokens) as stream events (kind 'topic': target is the topic) or queue messages
-- (kind 'queue': target is the queue); drop every staged row of the write, including those of
-- failed or duplicate attempts. Returns the number of rows published, or -1 when the batch was
-- committed before (a replay after a driver crash): then nothing is published again.
-- Raises MB008 when fewer rows are staged than the tasks reported (lost by a server crash).
CREATE FUNCTION mbus.spark_commit_write(
    p_sink text, p_query_id text, p_batch_id bigint, p_write_id text,
    p_tokens text[], p_expected bigint, p_kind text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_found  bigint;
    v_target text;
BEGIN
    IF p_kind NOT IN ('topic', 'queue') THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('unknown write kind %L (topic or queue)', p_kind);
    END IF;
    IF NOT mbus.spark_claim_batch(p_sink, p_query_id, p_batch_id, p_expected) THEN
        PERFORM mbus.spark_discard_write(p_write_id);
        RETURN -1;
    END IF;
    SELECT count(*) INTO v_found
    FROM mbus.spark_staged WHERE write_id = p_write_id AND token = ANY (p_tokens);
    IF v_found <> p_expected THEN
        RAISE EXCEPTION USING ERRCODE = 'MB008',
            MESSAGE = format('write %s: %s staged rows found, the tasks reported %s',
                             p_write_id, v_found, p_expected),
            HINT = 'staged rows were lost (server crash?); Spark must re-run the batch';
    END IF;
    IF p_kind = 'topic' THEN
        -- One set-based INSERT in task then row order (mbus.events' constraints check the
        -- topic and headers); listeners are woken as publish() wakes them.
        PERFORM mbus._check_log();
        INSERT INTO mbus.events (topic, key, payload, headers)
        SELECT s.target, s.key, s.payload, s.headers
        FROM mbus.spark_staged AS s
        WHERE s.write_id = p_write_id AND s.token = ANY (p_tokens)
        ORDER BY s.token, s.seq;
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
    RETURN v_found;
END;
$$;

-- Parts of a cursor as scalars (_spark_lo: the snapshot everything before is consumed at,
-- _spark_hi/_spark_after_*: the partial-position part or NULL, _spark_xip: lo's in-progress
-- list, _spark_top: the xmax of the cursor's newest snapshot). IMMUTABLE, so that with a
-- literal cursor the planner folds them into constants and spark_read's txid conditions
-- become index conditions on events_txid_id.
CREATE FUNCTION mbus._spark_lo(p_cursor text) RETURNS pg_snapshot
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).lo $$;
CREATE FUNCTION mbus._spark_hi(p_cursor text) RETURNS pg_snapshot
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).hi $$;
CREATE FUNCTION mbus._spark_after_txid(p_cursor text) RETURNS xid8
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).after_txid $$;
CREATE FUNCTION mbus._spark_after_id(p_cursor text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT ((mbus._parse_position(p_cursor)).pos).after_id $$;
CREATE FUNCTION mbus._spark_xip(p_cursor text) RETURNS xid8[]
LANGUAGE sql IMMUTABLE
AS $$ SELECT ARRAY(SELECT pg_catalog.pg_snapshot_xip(mbus._spark_lo(p_cursor))) $$;
CREATE FUNCTION mbus._spark_top(p_cursor text) RETURNS xid8
LANGUAGE sql IMMUTABLE
AS $$ SELECT pg_catalog.pg_snapshot_xmax(coalesce(mbus._spark_hi(p_cursor),
                                                  mbus._spark_lo(p_cursor))) $$;

-- spark_read(from, to, topics, part, nparts, keys, id_min, id_max, time bounds): the events
-- consumed at cursor `to` and not at cursor `from` (the rule of mbus.read_between and
-- mbus._consumed, written out here), restricted to part `part` of `nparts` by id
-- (id % nparts, so a single big transaction splits evenly too) and to the filters Spark pushed
-- down (NULL: no condition). A pure function of its arguments while the events are retained: a
-- replayed micro-batch reads exactly the same events (in no particular order).
-- Written so that the planner inlines it into the caller's COPY (a single SELECT, LANGUAGE sql,
-- no SET clause, every name qualified): rows stream out while the scan runs instead of being
-- collected in a tuplestore first, no function is called per row, and with literal cursors the
-- txid range is a constant index condition (a micro-batch never scans the whole log).
CREATE FUNCTION mbus.spark_read(
    p_from text, p_to text, p_topics text[] DEFAULT NULL,
    p_part integer DEFAULT 0, p_nparts integer DEFAULT 1,
    p_keys text[] DEFAULT NULL, p_id_min bigint DEFAULT NULL, p_id_max bigint DEFAULT NULL,
    p_time_ge timestamptz DEFAULT NULL, p_time_gt timestamptz DEFAULT NULL,
    p_time_le timestamptz DEFAULT NULL, p_time_lt timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint, topic text, key text, payload jsonb, headers jsonb,
               published_at timestamptz)
LANGUAGE sql STABLE
AS $$
    SELECT e.id, e.topic, e.key, e.payload, e.headers, e.published_at
    FROM mbus.events AS e
    WHERE (e.txid = ANY (mbus._spark_xip(p_from))
           OR (e.txid >= pg_catalog.pg_snapshot_xmax(mbus._spark_lo(p_from))
               AND e.txid < mbus._spark_top(p_to)))
      AND (pg_catalog.pg_visible_in_snapshot(e.txid, mbus._spark_lo(p_to))
           OR (mbus._spark_hi(p_to) IS NOT NULL
               AND pg_catalog.pg_visible_in_snapshot(e.txid, mbus._spark_hi(p_to))
               AND (e.txid, e.id) <= (mbus._spark_after_txid(p_to), mbus._spark_after_id(p_to))))
      AND NOT (pg_catalog.pg_visible_in_snapshot(e.txid, mbus._spark_lo(p_from))
               OR (mbus._spark_hi(p_from) IS NOT NULL
                   AND pg_catalog.pg_visible_in_snapshot(e.txid, mbus._spark_hi(p_from))
                   AND (e.txid, e.id)
                       <= (mbus._spark_after_txid(p_from), mbus._spark_after_id(p_from))))
      AND (p_topics IS NULL OR e.topic = ANY (p_topics))
      AND (p_nparts <= 1 OR e.id % p_nparts = p_part)
      AND (p_keys IS NULL OR e.key = ANY (p_keys))
      AND (p_id_min IS NULL OR e.id >= p_id_min)
      AND (p_id_max IS NULL OR e.id <= p_id_max)
      AND (p_time_ge IS NULL OR e.published_at >= p_time_ge)
      AND (p_time_gt IS NULL OR e.published_at > p_time_gt)
      AND (p_time_le IS NULL OR e.published_at <= p_time_le)
      AND (p_time_lt IS NULL OR e.published_at < p_time_lt)
$$;

-- spark_next_cursor(from, to, max_events, topics, before): the end of the next micro-batch
-- starting at cursor `from`, at most at snapshot cursor `to` (admission control).
--   * max_events: at most that many events of `topics` in the batch; the cut falls between
--     two events in (txid, id) order, expressed in the streams engine's partial-position form
--     ('<lo>;<hi>;<txid>;<id>'), so even one huge transaction is split;
--   * before: the batch stops before the first event (in that order) published at or after it
--     (the archive's horizon);
--   * returns `from` itself when there is nothing to read, so Spark runs no empty batch; when
--     only events of other topics arrived, returns the new position (the group moves on).
-- A partial `from` is finished first (the batch ends at its target at most). The candidates
-- are scanned in (txid, id) order on the events_txid_id index and the scan stops at the cut.
CREATE FUNCTION mbus.spark_next_cursor(
    p_from text, p_to text, p_max_events integer DEFAULT NULL, p_topics text[] DEFAULT NULL,
    p_before timestamptz DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_parsed record;
    v_from   mbus.stream_position;
    v_hi     pg_snapshot;
    v_xip    xid8[];
    v_xmax   xid8;
    v_n      bigint := 0;
    v_cut    boolean := false;
    v_txid   xid8;
    v_id     bigint;
    r        record;
BEGIN
    IF p_max_events IS NOT NULL AND p_max_events < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('max_events must be at least 1, not %s', p_max_events);
    END IF;
    v_parsed := mbus._parse_position(p_from);
    IF v_parsed.slot IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'the Spark source reads whole groups, not slots of a slotted group';
    END IF;
    v_from := v_parsed.pos;
    IF v_from.hi IS NOT NULL THEN
        v_hi := v_from.hi;
    ELSE
        v_hi := ((mbus._parse_position(p_to)).pos).lo;
        IF v_hi::text = v_from.lo::text THEN
            RETURN p_from;
        END IF;
    END IF;
    v_xip := ARRAY(SELECT pg_snapshot_xip(v_from.lo));
    v_xmax := pg_snapshot_xmax(v_from.lo);
    FOR r IN
        SELECT e.txid, e.id, e.published_at
        FROM mbus.events AS e
        WHERE (e.txid = ANY (v_xip) OR (e.txid >= v_xmax AND e.txid < pg_snapshot_xmax(v_hi)))
          AND pg_visible_in_snapshot(e.txid, v_hi)
          AND NOT (pg_visible_in_snapshot(e.txid, v_from.lo)
                   OR (v_from.hi IS NOT NULL
                       AND (e.txid, e.id) <= (v_from.after_txid, v_from.after_id)))
          AND (p_topics IS NULL OR e.topic = ANY (p_topics))
        ORDER BY e.txid, e.id
        LIMIT CASE WHEN p_before IS NULL THEN coalesce(p_max_events + 1, 1)
                   ELSE p_max_events + 1 END
    LOOP
        IF (p_before IS NOT NULL AND r.published_at >= p_before)
           OR (p_max_events IS NOT NULL AND v_n >= p_max_events) THEN
            v_cut := true;
            EXIT;
        END IF;
        v_n := v_n + 1;
        v_txid := r.txid;
        v_id := r.id;
    END LOOP;
    IF v_cut THEN
        IF v_n = 0 THEN
            RETURN p_from;
        END IF;
        RETURN mbus._format_position(ROW(v_from.lo, v_hi, v_txid, v_id));
    END IF;
    IF v_n = 0 THEN
        -- Nothing of ours; move on only if other events passed (else Spark would spin).
        IF p_topics IS NOT NULL AND EXISTS (
            SELECT 1 FROM mbus.events AS e
            WHERE (e.txid = ANY (v_xip) OR (e.txid >= v_xmax AND e.txid < pg_snapshot_xmax(v_hi)))
              AND pg_visible_in_snapshot(e.txid, v_hi)
              AND NOT (pg_visible_in_snapshot(e.txid, v_from.lo)
                       OR (v_from.hi IS NOT NULL
                           AND (e.txid, e.id) <= (v_from.after_txid, v_from.after_id)))) THEN
            RETURN mbus._format_position(ROW(v_hi, NULL, NULL, NULL));
        END IF;
        RETURN p_from;
    END IF;
    RETURN mbus._format_position(ROW(v_hi, NULL, NULL, NULL));
END;
$$;

-- The statistics the shipped `stats` job keeps up to date (pgmbus.spark.jobs.stats): edits
-- per user and per object per time window, from a captured table of edits.
CREATE TABLE mbus.stats_user_edits (
    user_name    text        PRIMARY KEY,
    edits        bigint      NOT NULL CHECK (edits >= 0),
    last_edit_at timestamptz NOT NULL
);

CREATE TABLE mbus.stats_object_activity (
    object_id    text        NOT NULL,
    window_start timestamptz NOT NULL,
    window_end   timestamptz NOT NULL,
    edits        bigint      NOT NULL CHECK (edits >= 0),
    PRIMARY KEY (object_id, window_start),
    CHECK (window_end > window_start)
);

COMMENT ON TABLE mbus.stats_user_edits IS 'Edits per user (pgmbus pipeline stats).';
COMMENT ON TABLE mbus.stats_object_activity IS
    'Edits per object per time window (pgmbus pipeline stats).';

SELECT mbus.restrict_public_execute();
