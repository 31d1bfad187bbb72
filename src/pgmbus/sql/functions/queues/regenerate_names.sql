-- Function: mbus.regenerate_names(qname)
--
-- Purpose:  The names the generated functions of qname use, quoted once here, for
--           mbus.fill_template: q, q_prefix ('<q>.') and chan (literals), tbl (the delivery
--           table, written mbus.{tbl}), seg0..seg3 (qualified identifiers), posted (the posted
--           counter's qualified name, a literal), fn_<what> (each generated function,
--           mbus.generated_names), and two fragments the claims and take_ share: ret_cols (the
--           returned row's columns over q; a priority > 0 comes back as headers.priority) and
--           mark (the CTE k marking the client iids of deleted rows d consumed).
-- Params:   qname  the queue's name (text; must exist)
-- Returns:  jsonb: name -> SQL text
-- Locks:    none
-- Calls:    mbus.fill_template, mbus.generated_name, mbus.generated_names
-- Tables:   mbus.client_iids
-- Design:   docs/DESIGN.md#regenerate_names-ret_cols-and-mark
CREATE OR REPLACE FUNCTION mbus.regenerate_names(qname text)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog
AS $$
DECLARE
    v_names jsonb;
BEGIN
    SELECT jsonb_object_agg('fn_' || g.what, quote_ident(g.name)) INTO v_names
    FROM mbus.generated_names(regenerate_names.qname) AS g WHERE g.kind = 'function';
    v_names := v_names || jsonb_build_object(
        'q', quote_literal(qname),
        'q_prefix', quote_literal(qname || '.'),
        'chan', quote_literal('mbus_q_' || qname),
        'tbl', quote_ident(mbus.generated_name('relation', 'table', qname)),
        'posted', quote_literal('mbus.' || quote_ident(
                      mbus.generated_name('relation', 'counter', qname))))
        || (SELECT jsonb_object_agg('seg' || n, 'mbus.' || quote_ident(
                       mbus.generated_name('relation', 'segment' || n, qname)))
            FROM generate_series(0, 3) AS n);
    v_names := v_names || jsonb_build_object(
        'mark', mbus.fill_template($t$,
                   k AS (UPDATE mbus.client_iids AS ci SET consumed_in = pg_current_xact_id()
                         FROM d WHERE ci.qname = {q} AND ci.iid = d.iid)$t$, v_names),
        'ret_cols', mbus.fill_template(
            'q.id AS id, coalesce(q.iid, {q_prefix} || q.id || ''@'' || v_db) AS iid, '
            'q.added AS added, q.delayed_until AS delayed_until, q.expires AS expires, '
            'CASE WHEN q.priority > 0 THEN coalesce(q.headers, '
            'jsonb_build_object(''enqueue_time'', q.added) '
            '|| (SELECT jsonb_build_object(''seenby'', jsonb_build_array(v_db), '
            '''source_db'', v_db, ''destination'', {q}))) '
            '|| jsonb_build_object(''priority'', q.priority) '
            'WHEN q.headers ? ''priority'' THEN q.headers - ''priority'' '
            'ELSE coalesce(q.headers, jsonb_build_object(''enqueue_time'', q.added) '
            '|| (SELECT jsonb_build_object(''seenby'', jsonb_build_array(v_db), '
            '''source_db'', v_db, ''destination'', {q}))) END '
            'AS headers, q.properties AS properties, q.data AS data, '
            'q.consume_after AS consume_after, q.attempts AS attempts', v_names));
    RETURN v_names;
END;
$$;
