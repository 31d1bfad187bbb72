-- Function: mbus._restricted_operators()
--
-- Purpose:  The operators a condition in the restricted grammar may use: the built-in
--           operators of pg_catalog whose function is IMMUTABLE and whose operands and result
--           are restricted types (mbus._restricted_types) or the polymorphic pseudo-types the
--           array and comparison operators are declared with (the actual types are checked on
--           the condition's own parse tree). Comparisons, arithmetic, LIKE and regular
--           expressions, jsonb's ->, ->>, #>, @>, ?, || and the array operators are in;
--           nothing in the list can read a table or a setting.
-- Params:   none
-- Returns:  oid[]: the operators' oids
-- Locks:    none
-- Callers:  mbus._restricted_condition_error
CREATE OR REPLACE FUNCTION mbus._restricted_operators()
RETURNS oid[]
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    WITH ok(t) AS (
        SELECT unnest(mbus._restricted_types() || ARRAY[0::oid] || ARRAY[
            'anyelement'::regtype, 'anyarray'::regtype, 'anynonarray'::regtype,
            'anycompatible'::regtype, 'anycompatiblearray'::regtype,
            'anycompatiblenonarray'::regtype]::oid[])
    )
    SELECT array_agg(o.oid)
    FROM pg_operator AS o
    JOIN pg_proc AS f ON f.oid = o.oprcode
    WHERE o.oprnamespace = 'pg_catalog'::regnamespace
      AND f.provolatile = 'i'
      AND o.oprleft IN (SELECT t FROM ok)
      AND o.oprright IN (SELECT t FROM ok)
      AND o.oprresult IN (SELECT t FROM ok);
$$;
