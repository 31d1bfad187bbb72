-- Function: mbus.public_entry_points()
--
-- Purpose:  The mbus functions PUBLIC may execute, as the text of their regprocedure; every
--           other mbus function is not executable by PUBLIC (restrict_public_execute enforces it
--           at the end of every install and upgrade, secure_queue for generated functions).
--           A function listed here that does not exist is ignored.
-- Params:   none
-- Returns:  text[]: signatures such as 'mbus.get_iid(text)' (regprocedure's text form)
-- Locks:    none
-- Calls:    mbus.ack, mbus.bury, mbus.check_name, mbus.clear_queue, mbus.consume,
--           mbus.consume_lease, mbus.consume_wait, mbus.consumen, mbus.extend, mbus.generated_name,
--           mbus.get_iid, mbus.nack, mbus.peek, mbus.post, mbus.post_batch, mbus.require_consumer,
--           mbus.require_queue, mbus.rotate_queue, mbus.take_from, mbus.upkeep_queue
-- Tables:   none
-- Design:   docs/DESIGN.md#public_entry_points-what-public-may-run-and-why-it-is-safe
CREATE OR REPLACE FUNCTION mbus.public_entry_points()
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT ARRAY[
        'mbus.ack(text,uuid,timestamp with time zone)',
        'mbus.bury(text,uuid,text,timestamp with time zone)',
        'mbus.check_name(text,text,integer)',
        'mbus.clear_queue(text,timestamp with time zone)',
        'mbus.consume(text,text,timestamp with time zone)',
        'mbus.consume_wait(text,text,interval,interval)',
        'mbus.consume_lease(text,text,integer,interval,integer,timestamp with time zone)',
        'mbus.consumen(text,text,integer,timestamp with time zone)',
        'mbus.extend(text,uuid,interval,timestamp with time zone)',
        'mbus.generated_name(text,text,text,text)',
        'mbus.get_iid(text)',
        'mbus.nack(text,uuid,interval,timestamp with time zone)',
        'mbus.peek(text,text)',
        'mbus.post(text,jsonb,jsonb,jsonb,timestamp with time zone,timestamp with time zone,text,'
            'text,anycompatible,integer)',
        'mbus.post_batch(text,jsonb[],jsonb[],jsonb[],timestamp with time zone,'
            'timestamp with time zone,integer[])',
        'mbus.require_consumer(text,text)',
        'mbus.require_queue(text)',
        'mbus.rotate_queue(text,integer)',
        'mbus.take_from(text,text,text)',
        'mbus.upkeep_queue(text,integer)'
    ]
$$;
