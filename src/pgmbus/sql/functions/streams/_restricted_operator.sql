-- Function: mbus._restricted_operator(p_op)
--
-- Purpose:  May a condition in the restricted grammar use this operator? Yes for a built-in
--           operator of pg_catalog whose function is IMMUTABLE and whose operands and result
--           are restricted types (mbus._restricted_types) or the polymorphic pseudo-types the
--           array and comparison operators are declared with (the actual types are checked on
--           the condition's own parse tree). Comparisons, arithmetic, LIKE and regular
--           expressions, jsonb's ->, ->>, #>, @>, ?, || and the array operators are in;
--           nothing it allows can read a table or a setting. Asked only for the operators a
--           condition uses (a list of all of them would cost a scan of pg_operator per check).
-- Params:   p_op  the operator's oid
-- Returns:  boolean: true when allowed (false for an unknown oid)
-- Locks:    none
-- Calls:    mbus._restricted_types
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus._restricted_operator(p_op oid)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog
AS $$
    SELECT EXISTS (
        SELECT 1
        FROM pg_operator AS o
        JOIN pg_proc AS f ON f.oid = o.oprcode
        CROSS JOIN LATERAL (SELECT mbus._restricted_types() || ARRAY[
            0::oid, 'anyelement'::regtype, 'anyarray'::regtype, 'anynonarray'::regtype,
            'anycompatible'::regtype, 'anycompatiblearray'::regtype,
            'anycompatiblenonarray'::regtype]::oid[] AS t) AS ok
        WHERE o.oid = p_op
          AND o.oprnamespace = 'pg_catalog'::regnamespace
          AND f.provolatile = 'i'
          AND o.oprleft = ANY (ok.t)
          AND o.oprright = ANY (ok.t)
          AND o.oprresult = ANY (ok.t));
$$;
