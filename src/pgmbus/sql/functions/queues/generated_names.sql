-- Function: mbus.generated_names(qname, cname)
--
-- Purpose:  The one list of the names made for a queue (cname NULL) or for one of its
--           consumers: functions, relations and roles, each made by mbus.generated_name. The
--           generator, drop_queue, drop_consumer, secure_queue and the collision check
--           (mbus.name_clash) all read it, so (queue, consumer) -> names is computed in one place
--           and checked one-to-one. Queue: post_, postn_, peek_, deps_, clear_queue_, take_,
--           ack_, nack_, extend_, bury_<q>, q_<q>, its segments, indexes, counter sequences and
--           claim floor q_<q>$floor, role mbus_<db>_post_<q>. Consumer: consume_, consumen_,
--           lease_, take_from_<q>_by_<c>, role mbus_<db>_consume_<q>_by_<c>.
-- Params:   qname  the queue's name (text)
--           cname  the consumer's name (text; NULL = the queue's own names)
-- Returns:  TABLE (kind text: 'function', 'relation' or 'role'; what text: the part, e.g. 'post',
--           'consumen', 'table', 'segment1'; name text)
-- Locks:    none
-- Calls:    mbus.generated_name
-- Tables:   mbus.consumer
CREATE OR REPLACE FUNCTION mbus.generated_names(qname text, cname text DEFAULT NULL)
RETURNS TABLE (kind text, what text, name text)
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT 'function', f, mbus.generated_name('function', f, qname)
    FROM unnest(ARRAY['post', 'postn', 'peek', 'deps', 'clear_queue', 'take', 'ack', 'nack',
                      'extend', 'bury']) AS f
    WHERE cname IS NULL
    UNION ALL
    SELECT 'relation', r, mbus.generated_name('relation', r, qname)
    FROM unnest(ARRAY['table', 'claim', 'id', 'iid', 'expires', 'prio']) AS r
    WHERE cname IS NULL
    UNION ALL
    SELECT 'relation', p || n, mbus.generated_name('relation', p || n, qname)
    FROM unnest(ARRAY['segment', 'claim', 'id', 'iid', 'lease', 'expires', 'prio']) AS p,
         generate_series(0, 3) AS n
    WHERE cname IS NULL
    UNION ALL
    SELECT 'relation', r, mbus.generated_name('relation', r, qname)
    FROM unnest(ARRAY['counter', 'floor']) AS r
    WHERE cname IS NULL
    UNION ALL
    SELECT 'relation', w || '_c' || c.cid,
           mbus.generated_name('relation', w || '_c' || c.cid, c.qname)
    FROM mbus.consumer AS c, unnest(ARRAY['posted', 'consumed']) AS w
    WHERE generated_names.cname IS NULL AND c.qname = generated_names.qname
    UNION ALL
    SELECT 'role', 'post', mbus.generated_name('role', 'post', qname)
    WHERE cname IS NULL
    UNION ALL
    SELECT 'function', f, mbus.generated_name('function', f, qname, cname)
    FROM unnest(ARRAY['consume', 'consumen', 'lease', 'take_from']) AS f
    WHERE cname IS NOT NULL
    UNION ALL
    SELECT 'role', 'consume', mbus.generated_name('role', 'consume', qname, cname)
    WHERE cname IS NOT NULL;
$$;
