-- Function: mbus.queue_counter_sequences(qname)
--
-- Purpose:  Make the counter sequences of a queue and its consumers that are missing, and drop
--           those of consumers that are gone: q_<qname>$posted (messages posted),
--           q_<qname>$c<cid>$posted (deliveries made for consumer cid) and
--           q_<qname>$c<cid>$consumed (deliveries it consumed or acked), and the claim floor
--           q_<qname>$floor (mbus.floor_guard; not called: no floor). Not transactional: a post
--           or consume that rolls back still counts. Each is OWNED BY mbus.q_<qname>.id, so
--           dropping the queue drops them. mbus.queue_counters reads the counters;
--           mbus.generated_names lists their names.
-- Params:   qname  the queue's name (text; its table must exist)
-- Returns:  void
-- Locks:    CREATE SEQUENCE / DROP SEQUENCE of the sequences it makes or drops; callers hold
--           pg_advisory_xact_lock(1835165041) (mbus.regenerate_queue's callers)
-- Calls:    mbus.generated_name, mbus.generated_names
-- Tables:   none
-- Design:   docs/DESIGN.md#decisions-and-the-figures-behind-them
CREATE OR REPLACE FUNCTION mbus.queue_counter_sequences(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_tbl  text := mbus.generated_name('relation', 'table', qname);
    v_want text[];
    v_name text;
BEGIN
    SELECT array_agg(g.name) INTO v_want
    FROM mbus.generated_names(queue_counter_sequences.qname) AS g
    WHERE g.kind = 'relation' AND g.what ~ '^(counter|floor|posted_c|consumed_c)';
    FOREACH v_name IN ARRAY v_want LOOP
        IF to_regclass(format('mbus.%I', v_name)) IS NULL THEN
            -- the claim floor holds epoch microseconds, negative before 1970
            EXECUTE format('CREATE SEQUENCE mbus.%I AS bigint %s OWNED BY mbus.%I.id', v_name,
                           CASE WHEN v_name = mbus.generated_name('relation', 'floor', qname)
                                THEN 'MINVALUE -9223372036854775808' ELSE '' END, v_tbl);
        END IF;
    END LOOP;
    FOR v_name IN
        SELECT c.relname FROM pg_class AS c
        WHERE c.relnamespace = 'mbus'::regnamespace AND c.relkind = 'S'
          AND starts_with(c.relname, v_tbl || '$c') AND c.relname <> ALL (v_want)
    LOOP
        EXECUTE format('DROP SEQUENCE mbus.%I', v_name);
    END LOOP;
END;
$$;
