-- read the next 10 events and commit the group's cursor, one transaction: pgmbus.
-- One statement: read_next may return an empty batch (the group then moves on by itself), and
-- the cursor is committed only when rows came back.
WITH r AS MATERIALIZED (SELECT * FROM mbus.read_next('bench', 10)),
     c AS (SELECT mbus.commit('bench', min(r.cursor)) FROM r HAVING count(*) > 0)
SELECT r.id, r.payload, x.n FROM r CROSS JOIN (SELECT count(*) AS n FROM c) AS x;
