-- View: mbus.sagas
--
-- Purpose:  Sagas with their steps: saga_id, name, state (running, completed, compensating,
--           compensated), reason, created_at, finished_at, and steps: {step: {forward,
--           compensation}} with forward pending/done/cancelled and compensation waiting/done (NULL
--           for a step without compensation).
-- Locks:    none (reads only)
-- Calls:    none
-- Tables:   mbus.saga, mbus.saga_step
CREATE OR REPLACE VIEW mbus.sagas AS
SELECT g.saga_id, g.name, g.state, g.reason, g.created_at, g.finished_at,
       (SELECT jsonb_object_agg(st.step, jsonb_build_object(
                   'forward', CASE WHEN st.done_at IS NOT NULL THEN 'done'
                                   WHEN g.state IN ('compensating', 'compensated') THEN 'cancelled'
                                   ELSE 'pending' END,
                   'compensation', CASE WHEN st.comp_qname IS NULL THEN NULL
                                        WHEN st.compensated_at IS NOT NULL THEN 'done'
                                        ELSE 'waiting' END) ORDER BY st.ord)
        FROM mbus.saga_step AS st WHERE st.saga_id = g.saga_id) AS steps
FROM mbus.saga AS g;
