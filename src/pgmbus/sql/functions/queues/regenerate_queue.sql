-- Function: mbus.regenerate_queue(qname)
--
-- Purpose:  Make (CREATE OR REPLACE) the per-queue functions of qname from the catalog
--           (consumers with their selectors, triggers), with static SQL only; the generic entry
--           points dispatch to them, fast clients call them directly. Names come from
--           mbus.generated_names, quoted once by mbus.regenerate_names; the families fill their
--           templates (mbus.fill_template): regenerate_fanout, regenerate_post (post_),
--           regenerate_batch (postn_), regenerate_peek_take (peek_, deps_, clear_queue_, take_),
--           regenerate_lease_ack (ack_, nack_, extend_, bury_) and regenerate_consume (per
--           consumer). Ends with mbus.secure_queue. tests/queues/golden holds their text.
-- Params:   qname  the queue's name (text; must exist)
-- Returns:  void
-- Locks:    SHARE ROW EXCLUSIVE on the queue's table the first time (CREATE TRIGGER
--           floor_guard_insert and floor_guard_vt, the claim floor's guards, mbus.floor_guard);
--           CREATE OR REPLACE FUNCTION and secure_queue's ALTER/GRANT/REVOKE update pg_proc rows
--           (two sessions regenerating one queue at once fail with 'tuple concurrently updated'),
--           so its callers hold pg_advisory_xact_lock(1835165041)
-- Calls:    mbus.floor_guard, mbus.generated_name, mbus.queue_counter_sequences,
--           mbus.regenerate_batch, mbus.regenerate_consume, mbus.regenerate_fanout,
--           mbus.regenerate_lease_ack, mbus.regenerate_names, mbus.regenerate_peek_take,
--           mbus.regenerate_post, mbus.secure_queue
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.regenerate_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_names  jsonb;
    v_fanout jsonb;
    v_tbl    text;
    v_seq    text;
BEGIN
    PERFORM mbus.queue_counter_sequences(qname);
    -- the claim floor's guards (mbus.floor_guard), made once: CREATE TRIGGER locks the table.
    -- Two triggers: PostgreSQL allows a transition table on a trigger of one event and no
    -- column list, and a statement-level one is what keeps a post's cost per statement.
    v_tbl := format('mbus.%I', mbus.generated_name('relation', 'table', qname));
    v_seq := format('mbus.%I', mbus.generated_name('relation', 'floor', qname));
    IF NOT EXISTS (SELECT 1 FROM pg_trigger AS t
                   WHERE t.tgrelid = v_tbl::regclass AND t.tgname = 'floor_guard_insert') THEN
        EXECUTE format('CREATE TRIGGER floor_guard_insert AFTER INSERT ON %s '
                       'REFERENCING NEW TABLE AS fresh FOR EACH STATEMENT '
                       'EXECUTE FUNCTION mbus.floor_guard(%L, %L)',
                       v_tbl, v_seq, hashtext(qname)::text);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_trigger AS t
                   WHERE t.tgrelid = v_tbl::regclass AND t.tgname = 'floor_guard_vt') THEN
        EXECUTE format('CREATE TRIGGER floor_guard_vt BEFORE UPDATE OF vt ON %s '
                       'FOR EACH ROW EXECUTE FUNCTION mbus.floor_guard(%L, %L)',
                       v_tbl, v_seq, hashtext(qname)::text);
    END IF;
    v_names := mbus.regenerate_names(qname);
    v_fanout := mbus.regenerate_fanout(qname, v_names);
    PERFORM mbus.regenerate_post(v_names, v_fanout);
    PERFORM mbus.regenerate_batch(v_names, v_fanout);
    PERFORM mbus.regenerate_peek_take(v_names);
    PERFORM mbus.regenerate_lease_ack(v_names, v_fanout);
    PERFORM mbus.regenerate_consume(qname, v_names);
    PERFORM mbus.secure_queue(qname);
END;
$$;
