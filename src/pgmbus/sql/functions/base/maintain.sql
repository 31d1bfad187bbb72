-- Function: mbus.maintain(p_now)
--
-- Purpose:  The periodic upkeep of every engine, run from a scheduler, a worker or
--           `pgmbus streams maintain`; safe to run at any rate (serialized by an advisory lock).
--           Its parts, each in its own subtransaction (a part that fails is rolled back alone
--           and named with its error in the report's "errors"): partitions, lagging_groups,
--           retention, subscriptions, temporary_queues, spark_staged, dedupe_keys, client_iids,
--           publish_keys; what each does is listed in DESIGN.md. Expiring a lagging group is
--           loud: a WARNING, an event on topic 'mbus.group_expired' and the counter
--           'groups_expired'. Settings are read inside the part that uses them.
-- Params:   p_now  the clock (NULL = now()); tests move it
-- Returns:  jsonb report: created, dropped, kept, expired_groups, expired_subscriptions,
--           temporary_dropped, spark_staged_dropped, dedupe_keys_dropped, client_iids_expired,
--           publish_keys_expired, errors (an object part -> message; {}
--           when every part succeeded; a failed part reports its empty or zero values)
-- Locks:    pg_advisory_xact_lock('mbus.streams.maintain'); ACCESS EXCLUSIVE on mbus.events
--           and the partitions it creates or drops; row locks of the groups, subscriptions and
--           staged rows it changes
-- Calls:    mbus._check_log, mbus._count, mbus._ensure_partition, mbus._partition_needed,
--           mbus._unread_before, mbus.clear_tempq, mbus.dedupe_clean, mbus.expire_client_iids,
--           mbus.expire_publish_keys, mbus.get_setting, mbus.given_clock, mbus.spark_clean_staged
-- Tables:   mbus.event_partitions, mbus.events, mbus.stream_cursors, mbus.stream_groups,
--           mbus.stream_scheduled, mbus.subscriptions
-- Design:   docs/DESIGN.md#maintain-the-parts-of-the-upkeep
CREATE OR REPLACE FUNCTION mbus.maintain(p_now timestamptz DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_now       timestamptz := coalesce(mbus.given_clock(p_now), now());
    v_interval  interval;
    v_ahead     integer;
    v_retention interval;
    v_cur       mbus.event_partitions;
    v_seq       bigint;
    v_created   text[] := '{}';
    v_dropped   text[] := '{}';
    v_kept      jsonb := '[]';
    v_expired   text[] := '{}';
    v_subs      bigint := 0;
    v_tempq     integer := 0;
    v_staged    bigint := 0;
    v_dedupe    bigint := 0;
    v_iids      bigint := 0;
    v_pkeys     bigint := 0;
    v_errors    jsonb := '{}';
    v_holders   text[];
    v_doomed    jsonb := '[]';
    v_msg       text;
    p           mbus.event_partitions;
    g           mbus.stream_groups;
    c           mbus.stream_cursors;
    v_lag       interval;
    v_rec       record;
BEGIN
    PERFORM mbus._check_log();
    PERFORM pg_advisory_xact_lock(hashtextextended('mbus.streams.maintain', 0));

    -- 1 and 2: the current partition, rollover, partitions ahead.
    BEGIN
        v_interval := mbus.get_setting('streams.partition_interval', '"1 day"') #>> '{}';
        v_ahead := mbus.get_setting('streams.partitions_ahead', '2')::integer;
        SELECT last_value INTO v_seq FROM mbus.event_seq;
        -- (setval is not transactional: should a maintain() that moved the sequence roll back,
        -- the partition the ids now go to is created here)
        IF mbus._ensure_partition((v_seq >> 40)::integer) THEN
            v_created := v_created || format('events_%s', lpad((v_seq >> 40)::text, 7, '0'));
        END IF;
        SELECT * INTO v_cur FROM mbus.event_partitions AS ep
        WHERE ep.lo_id <= v_seq AND v_seq < ep.hi_id;
        IF v_cur.opened_at IS NULL THEN
            UPDATE mbus.event_partitions AS ep SET opened_at = v_now
            WHERE ep.partition_no = v_cur.partition_no;
            UPDATE mbus.event_partitions AS ep SET closed_at = v_now
            WHERE ep.partition_no < v_cur.partition_no AND ep.closed_at IS NULL
              AND ep.opened_at IS NOT NULL;
            v_cur.opened_at := v_now;
        ELSIF v_cur.opened_at + v_interval <= v_now THEN
            IF mbus._ensure_partition(v_cur.partition_no + 1) THEN
                v_created := v_created || format('events_%s',
                                                 lpad((v_cur.partition_no + 1)::text, 7, '0'));
            END IF;
            PERFORM setval('mbus.event_seq', v_cur.hi_id, false);
            UPDATE mbus.event_partitions AS ep SET closed_at = v_now
            WHERE ep.partition_no = v_cur.partition_no;
            UPDATE mbus.event_partitions AS ep SET opened_at = v_now
            WHERE ep.partition_no = v_cur.partition_no + 1;
            v_cur.partition_no := v_cur.partition_no + 1;
        END IF;
        FOR i IN 1..greatest(v_ahead, 1) LOOP
            IF mbus._ensure_partition(v_cur.partition_no + i) THEN
                v_created := v_created || format('events_%s',
                                                 lpad((v_cur.partition_no + i)::text, 7, '0'));
            END IF;
        END LOOP;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('partitions', v_msg);
        v_created := '{}';
    END;

    -- 3: lagging groups. Every group is judged first, then the expired ones are marked and
    -- announced: the announcements are not unread events of the groups judged after them.
    BEGIN
        FOR v_rec IN
            SELECT sg AS g, sc AS c FROM mbus.stream_groups AS sg
            JOIN mbus.stream_cursors AS sc ON sc.group_name = sg.name
            WHERE sg.state = 'active' AND sg.max_lag IS NOT NULL
              AND sc.lo_taken_at + sg.max_lag < v_now
            ORDER BY sg.name, sc.slot
        LOOP
            g := v_rec.g;
            c := v_rec.c;
            IF g.name = ANY (v_expired) THEN
                CONTINUE;
            END IF;
            IF EXISTS (SELECT 1 FROM mbus.event_partitions AS ep
                       WHERE mbus._unread_before(ep.name, g, c, v_now - g.max_lag)) THEN
                v_expired := v_expired || g.name;
                v_doomed := v_doomed || jsonb_build_object(
                    'group', g.name, 'slot', c.slot, 'lag', (v_now - c.lo_taken_at)::text,
                    'max_lag', g.max_lag::text, 'expired_at', v_now);
            END IF;
        END LOOP;
        FOR v_rec IN SELECT d.x FROM jsonb_array_elements(v_doomed) AS d (x) LOOP
            UPDATE mbus.stream_groups AS sg
            SET state = 'expired', expired_at = v_now,
                expired_why = format('slot %s lagged %s behind (max_lag %s)',
                                     v_rec.x ->> 'slot', v_rec.x ->> 'lag',
                                     v_rec.x ->> 'max_lag')
            WHERE sg.name = v_rec.x ->> 'group';
            PERFORM mbus._count('groups_expired');
            INSERT INTO mbus.events (topic, key, payload, published_at)
            VALUES ('mbus.group_expired', v_rec.x ->> 'group', v_rec.x, v_now);
            RAISE WARNING 'pgmbus: consumer group % expired: slot % lagged % behind (max_lag %)',
                v_rec.x ->> 'group', v_rec.x ->> 'slot', v_rec.x ->> 'lag',
                v_rec.x ->> 'max_lag';
        END LOOP;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('lagging_groups', v_msg);
        v_expired := '{}';
    END;

    -- 4: retention.
    BEGIN
        v_retention := mbus.get_setting('streams.retention', '"7 days"') #>> '{}';
        FOR p IN
            SELECT * FROM mbus.event_partitions AS ep
            WHERE ep.closed_at IS NOT NULL AND ep.closed_at + v_retention < v_now
            ORDER BY ep.partition_no
        LOOP
            v_holders := ARRAY(
                SELECT DISTINCT sg.name
                FROM mbus.stream_groups AS sg
                JOIN mbus.stream_cursors AS sc ON sc.group_name = sg.name
                WHERE sg.state = 'active' AND mbus._partition_needed(p.name, sg, sc)
                ORDER BY sg.name);
            IF EXISTS (SELECT 1 FROM mbus.stream_scheduled AS ss
                       WHERE ss.id >= p.lo_id AND ss.id < p.hi_id) THEN
                v_holders := v_holders || 'mbus.stream_scheduled'::text;  -- future-dated events
            END IF;
            IF cardinality(v_holders) > 0 THEN
                v_kept := v_kept || jsonb_build_object('partition', p.name, 'groups', v_holders);
                CONTINUE;
            END IF;
            EXECUTE format('DROP TABLE mbus.%I', p.name);
            DELETE FROM mbus.event_partitions AS ep WHERE ep.partition_no = p.partition_no;
            v_dropped := v_dropped || p.name;
        END LOOP;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('retention', v_msg);
        v_dropped := '{}';
        v_kept := '[]';
    END;

    -- 5: subscriptions of departed listeners.
    BEGIN
        DELETE FROM mbus.subscriptions AS s
        WHERE s.expires_after IS NOT NULL AND s.last_active_at + s.expires_after < v_now;
        GET DIAGNOSTICS v_subs = ROW_COUNT;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('subscriptions', v_msg);
        v_subs := 0;
    END;

    -- 6: temporary queues and consumers whose session has ended (the seed's clear_tempq), so
    -- that the regular maintenance call collects them.
    BEGIN
        v_tempq := mbus.clear_tempq();
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('temporary_queues', v_msg);
        v_tempq := 0;
    END;

    -- 7: staged rows of Spark writes abandoned by their driver.
    BEGIN
        v_staged := mbus.spark_clean_staged(p_now);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('spark_staged', v_msg);
        v_staged := 0;
    END;

    -- 8: dedupe keys whose message is no longer pending (queue features, mbus.dedupe_clean).
    BEGIN
        v_dedupe := mbus.dedupe_clean();
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('dedupe_keys', v_msg);
        v_dedupe := 0;
    END;

    -- 9: client-given iids of queue posts older than queues.iid_window.
    BEGIN
        v_iids := mbus.expire_client_iids(NULL, p_now);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('client_iids', v_msg);
        v_iids := 0;
    END;

    -- 10: idempotency keys of stream publishes older than streams.idempotency_window.
    BEGIN
        v_pkeys := mbus.expire_publish_keys(p_now);
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_msg = MESSAGE_TEXT;
        v_errors := v_errors || jsonb_build_object('publish_keys', v_msg);
        v_pkeys := 0;
    END;

    IF v_errors <> '{}' THEN
        RAISE WARNING 'pgmbus: maintain() parts failed (the others were done): %', v_errors;
    END IF;
    RETURN jsonb_build_object('created', to_jsonb(v_created), 'dropped', to_jsonb(v_dropped),
                              'kept', v_kept, 'expired_groups', to_jsonb(v_expired),
                              'expired_subscriptions', v_subs, 'temporary_dropped', v_tempq,
                              'spark_staged_dropped', v_staged, 'dedupe_keys_dropped', v_dedupe,
                              'client_iids_expired', v_iids, 'publish_keys_expired', v_pkeys,
                              'errors', v_errors);
END;
$$;
