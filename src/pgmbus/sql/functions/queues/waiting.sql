-- View: mbus.waiting
--
-- Purpose:  Messages waiting for dependencies: qname, id, iid, pending (dependencies left), since,
--           and waits_for (the iids they still wait for, sorted).
-- Locks:    none (reads only)
-- Callers:  pgmbus.cli.queue_workflow.waiting_cmd via sql/queues.sql 'waiting_list' (CLI
--           `pgmbus queue waiting`); tests tests/queues/test_queues2_deps.py, test_queues_segments.py
CREATE OR REPLACE VIEW mbus.waiting AS
SELECT w.qname, w.id, w.iid, w.pending, w.since,
       ARRAY(SELECT d.dep_iid FROM mbus.msg_dep AS d
             WHERE d.qname = w.qname AND d.id = w.id ORDER BY d.dep_iid) AS waits_for
FROM mbus.msg_wait AS w;
