-- Function: mbus.secure_queue(qname)
--
-- Purpose:  Set the privileges of qname's generated functions; the last step of every
--           regeneration. Every generated function is revoked from PUBLIC explicitly. Under the
--           roles security model, post_, postn_ and peek_<q> become SECURITY DEFINER with a pinned
--           search_path, executable by the post role; ack_, nack_, extend_, bury_, peek_<q> and
--           each consumer's functions by that consumer's role (the EXECUTE check is the role
--           check); take_<q> and clear_queue_<q> stay the owner's. Queues without the model keep
--           SECURITY INVOKER functions (no per-call GUC cost) executable by their owner only.
-- Params:   qname  the queue's name (text)
-- Returns:  void
-- Locks:    none of its own (ALTER FUNCTION, GRANT, REVOKE update pg_proc rows)
-- Calls:    mbus.consumer_functions, mbus.generated_name, mbus.generated_names, mbus.queue_role
-- Tables:   mbus.consumer, mbus.queue
CREATE OR REPLACE FUNCTION mbus.secure_queue(qname text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $$
DECLARE
    v_post text := mbus.queue_role('post', qname);
    r      record;
    f      text;
    v_fn   regprocedure;
BEGIN
    -- Per-schema default privileges cannot take back the global EXECUTE for PUBLIC, so every
    -- generated function is revoked explicitly.
    FOR v_fn IN
        SELECT p.oid::regprocedure FROM pg_proc AS p
        WHERE p.pronamespace = 'mbus'::regnamespace
          AND (p.proname = ANY (SELECT g.name FROM mbus.generated_names(secure_queue.qname) AS g
                                WHERE g.kind = 'function')
               OR p.proname = ANY (SELECT unnest(mbus.consumer_functions(secure_queue.qname, c.cname))
                                   FROM mbus.consumer AS c WHERE c.qname = secure_queue.qname))
          AND (p.proacl IS NULL OR 0 = ANY (SELECT a.grantee FROM aclexplode(p.proacl) AS a))
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_fn);
    END LOOP;
    IF NOT (SELECT q.roles_security FROM mbus.queue AS q WHERE q.qname = secure_queue.qname) THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT x.fname, x.grantee
        FROM (SELECT mbus.generated_name('function', f1.p, secure_queue.qname), v_post
              FROM unnest(ARRAY['post', 'postn', 'peek']) AS f1(p)
              UNION ALL
              SELECT mbus.generated_name('function', f2.p, secure_queue.qname),
                     mbus.queue_role('consume', secure_queue.qname, c.cname)
              FROM mbus.consumer AS c,
                   unnest(ARRAY['ack', 'nack', 'extend', 'bury', 'peek']) AS f2(p)
              WHERE c.qname = secure_queue.qname
              UNION ALL
              SELECT unnest(mbus.consumer_functions(secure_queue.qname, c.cname)),
                     mbus.queue_role('consume', secure_queue.qname, c.cname)
              FROM mbus.consumer AS c WHERE c.qname = secure_queue.qname) AS x(fname, grantee)
    LOOP
        FOR v_fn IN SELECT p.oid::regprocedure FROM pg_proc AS p
                    WHERE p.pronamespace = 'mbus'::regnamespace AND p.proname = r.fname LOOP
            EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, pg_temp',
                           v_fn);
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_fn);
            IF EXISTS (SELECT 1 FROM pg_roles AS x WHERE x.rolname = r.grantee) THEN
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', v_fn, r.grantee);
            END IF;
        END LOOP;
    END LOOP;
    FOREACH f IN ARRAY ARRAY['take', 'clear_queue'] LOOP
        FOR v_fn IN SELECT p.oid::regprocedure FROM pg_proc AS p
                    WHERE p.pronamespace = 'mbus'::regnamespace
                      AND p.proname = mbus.generated_name('function', f, qname) LOOP
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', v_fn);
        END LOOP;
    END LOOP;
END;
$$;
