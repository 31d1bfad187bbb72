-- Function: mbus._cursor_position(p_cursor)
--
-- Purpose:  A cursor's position (mbus._parse_position without its slot). IMMUTABLE and of a
--           named composite type, so that with a constant cursor the planner computes it while
--           planning (it pre-computes no function returning a bare record, like
--           _parse_position): mbus.spark_read's literal cursors then fold mbus._between's
--           bounds into constants.
-- Params:   p_cursor  a stream cursor (text; a slot prefix is ignored)
-- Returns:  mbus.stream_position; MB006 for a malformed cursor
-- Locks:    none (computes only)
-- Calls:    mbus._parse_position
-- Tables:   none
CREATE OR REPLACE FUNCTION mbus._cursor_position(p_cursor text) RETURNS mbus.stream_position
LANGUAGE sql IMMUTABLE
AS $$ SELECT (mbus._parse_position(p_cursor)).pos $$;
