-- View: mbus.sagas
--
-- Purpose:  Sagas with their steps: forward state pending/done/cancelled, compensation state
--           waiting/done (NULL for a step without compensation).
-- Locks:    FILL
-- Callers:  FILL
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
