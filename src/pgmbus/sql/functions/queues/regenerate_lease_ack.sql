-- Function: mbus.regenerate_lease_ack(names, fanout)
--
-- Purpose:  Make the functions of qname that settle a lease (a lease_<q>_by_<c> claim):
--           ack_<q>(token) (the message is done), nack_<q>(token, delay) (visible again after
--           delay), extend_<q>(token, lease) (the lease now ends lease after now; returns the new
--           end) and bury_<q>(token, reason) (to mbus.dmq with the reason). Each raises MB007
--           when the token no longer owns the message. ack_ probes the lease-token index of the
--           segment its token names (else every segment) and bumps the consumed counter of the
--           row's consumer.
-- Params:   names   mbus.regenerate_names(q)
--           fanout  mbus.regenerate_fanout(q, names)
-- Returns:  void
-- Locks:    none of its own (CREATE OR REPLACE FUNCTION; see mbus.regenerate_queue)
-- Calls:    mbus.fill_template, mbus.given_clock
-- Tables:   mbus.consumer, mbus.dmq
-- Design:   docs/DESIGN.md#regenerate_batch-and-regenerate_lease_ack-plans-kept-and-no-guc-per-call
CREATE OR REPLACE FUNCTION mbus.regenerate_lease_ack(names jsonb, fanout jsonb)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog
AS $gen$
DECLARE
    v_ack jsonb := names || jsonb_build_object(
        'ackn', CASE WHEN fanout ->> 'acked' = '' THEN 'NULL::bigint'
                     ELSE 'CASE q.c' || (fanout ->> 'acked') || ' END' END);
    v_ackseg text := '';  -- ack_'s DELETE in each segment
BEGIN
    FOR n IN 0 .. 3 LOOP
        v_ackseg := v_ackseg || mbus.fill_template($t$
    WHEN '{n}' THEN
        DELETE FROM {seg} AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, {ackn} INTO v_c, v_n;$t$, v_ack || jsonb_build_object(
            'n', n::text, 'seg', v_ack ->> ('seg' || n)));
    END LOOP;
    v_ack := v_ack || jsonb_build_object('ackseg', v_ackseg);
    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_ack}(token uuid, p_now timestamptz DEFAULT NULL)
RETURNS void LANGUAGE plpgsql VOLATILE AS {body}$f$,
    jsonb_build_object(
        'fn_ack', names ->> 'fn_ack',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_c   integer;
    v_n   bigint;  -- counter: deliveries the row's consumer consumed
BEGIN
    CASE right(token::text, 1){ackseg}
    ELSE
        NULL;
    END CASE;
    IF v_c IS NULL THEN
        DELETE FROM mbus.{tbl} AS q WHERE q.lease_token = token AND q.vt > v_now
        RETURNING q.c, {ackn} INTO v_c, v_n;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'MB007',
                MESSAGE = format('lease %s on queue %s is no longer held', token, {q});
        END IF;
    END IF;
END;
$b$, v_ack))));

    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_nack}(token uuid, delay interval DEFAULT '0'::interval,
                                   p_now timestamptz DEFAULT NULL)
RETURNS void LANGUAGE plpgsql VOLATILE AS {body}$f$,
    jsonb_build_object(
        'fn_nack', names ->> 'fn_nack',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
BEGIN
    IF delay IS NULL OR delay < '0'::interval OR delay > '100 years'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('nack delay %s is out of range (>= 0, at most 100 years)', delay);
    END IF;
    UPDATE mbus.{tbl} AS q SET vt = v_now + delay, lease_token = NULL
    WHERE q.lease_token = token AND q.vt > v_now;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, {q});
    END IF;
END;
$b$, names))));

    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_extend}(token uuid, lease interval,
                                   p_now timestamptz DEFAULT NULL)
RETURNS timestamptz LANGUAGE plpgsql VOLATILE AS {body}$f$,
    jsonb_build_object(
        'fn_extend', names ->> 'fn_extend',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_now timestamptz := coalesce(mbus.given_clock(p_now), clock_timestamp());
    v_db  text := current_database();
    v_end timestamptz;
BEGIN
    IF lease IS NULL OR lease <= '0'::interval OR lease > '100 years'::interval THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('lease %s is out of range (> 0, at most 100 years)', lease);
    END IF;
    UPDATE mbus.{tbl} AS q SET vt = v_now + lease
    WHERE q.lease_token = token AND q.vt > v_now
    RETURNING q.vt INTO v_end;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, {q});
    END IF;
    RETURN v_end;
END;
$b$, names))));

    EXECUTE mbus.fill_template($f$
CREATE OR REPLACE FUNCTION mbus.{fn_bury}(token uuid, reason text, p_now timestamptz DEFAULT NULL)
RETURNS bigint LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog AS {body}$f$,
    jsonb_build_object(
        'fn_bury', names ->> 'fn_bury',
        'body', quote_literal(mbus.fill_template($b$
DECLARE
    v_id bigint;
    v_db text := current_database();
BEGIN
    WITH d AS (
        DELETE FROM mbus.{tbl} AS q
        WHERE q.lease_token = token AND q.vt > coalesce(mbus.given_clock(p_now), clock_timestamp())
        RETURNING q.c AS c, q.priority AS priority, {ret_cols})
    INSERT INTO mbus.dmq (qname, cname, id, iid, added, delayed_until, expires, headers,
                          properties, data, consume_after, attempts, reason, priority)
    SELECT {q}, c.cname, d.id, d.iid, d.added, d.delayed_until, d.expires, d.headers,
           d.properties, d.data, d.consume_after, d.attempts, coalesce(reason, 'buried'),
           d.priority
    FROM d LEFT JOIN mbus.consumer AS c ON c.cid = d.c
    RETURNING dmq_id INTO v_id;
    IF v_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'MB007',
            MESSAGE = format('lease %s on queue %s is no longer held', token, {q});
    END IF;
    RETURN v_id;
END;
$b$, names))));
END;
$gen$;
