-- Function: mbus.consumer_functions(qname, cname)
--
-- Purpose:  The names of the functions generated for one consumer: consume_, consumen_, lease_ and
--           take_from_<qname>_by_<cname>. One list, so the code that drops or secures them stays in
--           step with the code that makes them (mbus.regenerate_queue).
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text)
-- Returns:  text[]: the four function names (unqualified; they live in schema mbus)
-- Locks:    none
-- Callers:  mbus.drop_consumer, mbus.drop_queue, mbus.secure_queue
CREATE OR REPLACE FUNCTION mbus.consumer_functions(qname text, cname text)
RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog
AS $$
    SELECT ARRAY[format('consume_%s_by_%s', qname, cname), format('consumen_%s_by_%s', qname, cname),
                 format('lease_%s_by_%s', qname, cname), format('take_from_%s_by_%s', qname, cname)];
$$;
