-- View: mbus.queues
--
-- Purpose:  The queues with their consumers and triggers: qname, ncons, roles_security, created_at,
--           consumers (their names, sorted; '{}' when none) and triggers_to (the destination queues
--           of triggers from it, sorted).
-- Locks:    none (reads only)
-- Calls:    none
-- Tables:   mbus.consumer, mbus.queue, mbus.queue_trigger
CREATE OR REPLACE VIEW mbus.queues AS
SELECT q.qname, q.ncons, q.roles_security, q.created_at,
       coalesce((SELECT array_agg(c.cname ORDER BY c.cname) FROM mbus.consumer AS c
                 WHERE c.qname = q.qname), '{}') AS consumers,
       coalesce((SELECT array_agg(tr.dst ORDER BY tr.dst) FROM mbus.queue_trigger AS tr
                 WHERE tr.src = q.qname), '{}') AS triggers_to
FROM mbus.queue AS q;
