-- View: mbus.waiting
--
-- Purpose:  Messages waiting for dependencies, with the iids they still wait for.
-- Locks:    FILL
-- Callers:  FILL
CREATE OR REPLACE VIEW mbus.waiting AS
SELECT w.qname, w.id, w.iid, w.pending, w.since,
       ARRAY(SELECT d.dep_iid FROM mbus.msg_dep AS d
             WHERE d.qname = w.qname AND d.id = w.id ORDER BY d.dep_iid) AS waits_for
FROM mbus.msg_wait AS w;
