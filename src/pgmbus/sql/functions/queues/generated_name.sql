-- Function: mbus.generated_name(kind, what, qname, cname)
--
-- Purpose:  How a name is made for a queue (cname NULL) or one of its consumers, from its part:
--           functions <what>_<q> and <what>_<q>_by_<c>; relations q_<q> ('table'), q_<q>_<what>
--           ('claim', 'id', ...), q_<q>$<n> ('segment<n>'), q_<q>_<what>$<n> ('claim<n>', ...),
--           q_<q>$posted ('counter'), q_<q>$c<cid>$posted|consumed ('posted_c<cid>',
--           'consumed_c<cid>'); roles from mbus.queue_role. The one formula: every function that
--           calls or touches a generated object, and the Python client, asks here. It reads no
--           table, so the dispatchers pay a function call for it, not a query.
-- Params:   kind   'function', 'relation' or 'role'
--           what   the part, as generated_names lists it ('post', 'take_from', 'table', ...)
--           qname  the queue's name (text)
--           cname  the consumer's name (text; NULL = a name of the queue itself)
-- Returns:  text, the name (unquoted); raises MB001 for a NULL qname, XX000 for a kind that is
--           none of the three (a mistake of the caller, not of its input)
-- Locks:    none
-- Calls:    mbus.queue_role
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus.generated_name(kind text, what text, qname text,
                                               cname text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
BEGIN
    IF qname IS NULL THEN
        -- format('%s_%s', 'post', NULL) would give 'post_', a name of no queue
        RAISE EXCEPTION USING ERRCODE = 'MB001', MESSAGE = 'queue name must not be empty';
    END IF;
    CASE kind
    WHEN 'function' THEN
        RETURN CASE WHEN cname IS NULL THEN format('%s_%s', what, qname)
                    ELSE format('%s_%s_by_%s', what, qname, cname) END;
    WHEN 'relation' THEN
        RETURN CASE
            WHEN what = 'table' THEN format('q_%s', qname)
            WHEN what = 'counter' THEN format('q_%s$posted', qname)
            WHEN what = 'floor' THEN format('q_%s$floor', qname)
            WHEN what ~ '^segment[0-9]+$' THEN format('q_%s$%s', qname, substr(what, 8))
            WHEN what ~ '^(posted|consumed)_c[0-9]+$'
                THEN format('q_%s$c%s$%s', qname, substring(what FROM '_c([0-9]+)$'),
                            substring(what FROM '^([a-z]+)_c'))
            WHEN what ~ '^[a-z]+[0-9]+$'
                THEN format('q_%s_%s$%s', qname, substring(what FROM '^([a-z]+)'),
                            substring(what FROM '([0-9]+)$'))
            ELSE format('q_%s_%s', qname, what) END;
    WHEN 'role' THEN
        RETURN mbus.queue_role(what, qname, cname);
    ELSE
        RAISE EXCEPTION USING ERRCODE = 'XX000',
            MESSAGE = format('no generated name of kind %L', kind);
    END CASE;
END;
$$;
