-- Function: mbus.capture_table(tbl, topic, columns)
--
-- Purpose:  Publish tbl's changes on topic: creates the triggers mbus_capture_row (see
--           mbus._capture_row for the events' payload) and mbus_capture_truncate, and records
--           the capture in mbus.captures. "row" carries these columns (default: all; the primary
--           key is always included). Calling it again replaces the previous capture of the
--           table. Tables of schema mbus cannot be captured.
-- Params:   tbl      the table (regclass; an ordinary or partitioned table)
--           topic    the topic (text, at most 200 bytes; NULL = the table's name)
--           columns  the columns to carry in "row" (text[]; NULL = all)
-- Returns:  void; MB006 for something that is not a table, a table of schema mbus, a bad topic
--           or unknown columns
-- Locks:    SHARE ROW EXCLUSIVE on tbl (CREATE TRIGGER), and ACCESS EXCLUSIVE on tbl when it
--           replaces an existing capture (stop_capture's DROP TRIGGER), held to commit: writers
--           and readers of tbl wait; the row of mbus.captures
-- Calls:    mbus._capture_row, mbus._capture_truncate, mbus.stop_capture
-- Tables:   mbus.captures
CREATE OR REPLACE FUNCTION mbus.capture_table(tbl regclass, topic text DEFAULT NULL,
                                   columns text[] DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
DECLARE
    v_topic  text;
    v_keys   text[];
    v_bad    text[];
    v_schema text;
    v_name   text;
BEGIN
    SELECT n.nspname, c.relname INTO v_schema, v_name
    FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = tbl AND c.relkind IN ('r', 'p');
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = format('%s is not a table', tbl);
    END IF;
    IF v_schema = 'mbus' THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006',
            MESSAGE = 'tables of the mbus schema cannot be captured';
    END IF;
    v_topic := coalesce(topic, v_name);
    IF v_topic = '' OR octet_length(v_topic) > 200 THEN
        RAISE EXCEPTION USING ERRCODE = 'MB006', MESSAGE = format('invalid topic %L', v_topic);
    END IF;
    v_keys := ARRAY(
        SELECT a.attname FROM pg_index AS i
        CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k (attnum, n)
        JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
        WHERE i.indrelid = tbl AND i.indisprimary
        ORDER BY k.n);
    IF columns IS NOT NULL THEN
        v_bad := ARRAY(SELECT col FROM unnest(columns) AS col
                       WHERE NOT EXISTS (SELECT 1 FROM pg_attribute AS a
                                         WHERE a.attrelid = tbl AND a.attname = col
                                           AND a.attnum > 0 AND NOT a.attisdropped));
        IF cardinality(v_bad) > 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'MB006',
                MESSAGE = format('%s has no column(s) %s', tbl, array_to_string(v_bad, ', '));
        END IF;
    END IF;
    PERFORM mbus.stop_capture(tbl, missing_ok => true);
    EXECUTE format('CREATE TRIGGER mbus_capture_row AFTER INSERT OR UPDATE OR DELETE ON %s '
                   'FOR EACH ROW EXECUTE FUNCTION mbus._capture_row(%L, %L, %L, %L)',
                   tbl, v_topic, v_keys::text, coalesce(columns::text, '*'), tbl::oid);
    EXECUTE format('CREATE TRIGGER mbus_capture_truncate AFTER TRUNCATE ON %s '
                   'FOR EACH STATEMENT EXECUTE FUNCTION mbus._capture_truncate(%L)',
                   tbl, v_topic);
    INSERT INTO mbus.captures (tbl, topic, columns, key_columns)
    VALUES (tbl, v_topic, columns, v_keys);
END;
$$;
