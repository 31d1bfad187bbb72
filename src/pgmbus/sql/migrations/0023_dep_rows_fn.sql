-- mbus.dep_rows now names the generated function deps_<q> that runs consume_after's statements
-- on a queue's deliveries (with plans kept) instead of a table and a condition for EXECUTE; its
-- OUT columns change, which CREATE OR REPLACE cannot do. The function file makes the new one;
-- install and upgrade regenerate every queue, which makes deps_<q> (issue 14).
DROP FUNCTION IF EXISTS mbus.dep_rows(text);
