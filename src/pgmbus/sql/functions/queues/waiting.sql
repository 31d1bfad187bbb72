-- View: mbus.waiting
--
-- Purpose:  Messages waiting for dependencies: qname, id, iid, pending (dependencies left), since,
--           and waits_for (the iids they still wait for, sorted).
-- Locks:    none (reads only)
-- Calls:    none
-- Tables:   mbus.msg_dep, mbus.msg_wait
CREATE OR REPLACE VIEW mbus.waiting AS
SELECT w.qname, w.id, w.iid, w.pending, w.since,
       ARRAY(SELECT d.dep_iid FROM mbus.msg_dep AS d
             WHERE d.qname = w.qname AND d.id = w.id ORDER BY d.dep_iid) AS waits_for
FROM mbus.msg_wait AS w;
