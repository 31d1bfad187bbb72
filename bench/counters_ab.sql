-- The queue counters' cost per post, A/B in one server session (docs/benchmarks.md, Queue
-- counters). Run on a database with the mbus schema: psql -f bench/counters_ab.sql, inside
-- flock /tmp/pgmbus-bench.lock. Makes queue 'bench' (regenerated at the start: with counters).
\set QUIET on
SELECT mbus.create_queue('bench', 1);
DROP TABLE IF EXISTS defs, res;
CREATE TEMP TABLE defs AS
SELECT pg_get_functiondef('mbus.post_bench(jsonb,jsonb,jsonb,timestamptz,timestamptz,text,text,anycompatible)'::regprocedure) AS with_counters;
UPDATE defs SET with_counters = with_counters;
ALTER TABLE defs ADD COLUMN without_counters text;
UPDATE defs SET without_counters = regexp_replace(with_counters, '\n[^\n]*PERFORM nextval\([^\n]*-- counter[^\n]*', '', 'g');
SELECT length(with_counters) - length(without_counters) AS removed_chars FROM defs;
CREATE TEMP TABLE res (variant text, round int, ms float8);
CREATE OR REPLACE PROCEDURE run_variant(v text, r int) LANGUAGE plpgsql AS $p$
DECLARE t0 timestamptz; d text;
BEGIN
  SELECT CASE v WHEN 'with' THEN with_counters ELSE without_counters END INTO d FROM defs;
  EXECUTE d;
  COMMIT;
  t0 := clock_timestamp();
  FOR i IN 1..20000 LOOP PERFORM mbus.post_bench('{"n": 1}'); END LOOP;
  INSERT INTO res VALUES (v, r, extract(epoch FROM clock_timestamp() - t0) * 1000);
  COMMIT;
  TRUNCATE mbus."q_bench$1", mbus."q_bench$2", mbus."q_bench$3", mbus."q_bench$0";
  COMMIT;
END $p$;
CALL run_variant('without', 0);
CALL run_variant('with', 1); CALL run_variant('without', 1);
CALL run_variant('with', 2); CALL run_variant('without', 2);
CALL run_variant('with', 3); CALL run_variant('without', 3);
CALL run_variant('with', 4); CALL run_variant('without', 4);
CALL run_variant('with', 5); CALL run_variant('without', 5);
CALL run_variant('with', 6); CALL run_variant('without', 6);
CALL run_variant('with', 7); CALL run_variant('without', 7);
DO $$ DECLARE t0 timestamptz; BEGIN
  CREATE SEQUENCE IF NOT EXISTS s_cost;
  t0 := clock_timestamp(); FOR i IN 1..200000 LOOP PERFORM 1; END LOOP;
  INSERT INTO res VALUES ('loop', 0, extract(epoch FROM clock_timestamp() - t0) * 1000);
  t0 := clock_timestamp(); FOR i IN 1..200000 LOOP PERFORM nextval('s_cost'); END LOOP;
  INSERT INTO res VALUES ('nextval', 0, extract(epoch FROM clock_timestamp() - t0) * 1000);
END $$;
\set QUIET off
SELECT variant, round, round(ms::numeric, 0) AS ms,
       round((ms * 1000 / CASE WHEN variant IN ('loop', 'nextval') THEN 200000 ELSE 20000 END)::numeric, 2) AS us_each
FROM res ORDER BY variant, round;
SELECT (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM res WHERE variant = 'with' AND round > 0) * 0.05 AS with_us_per_post,
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) FROM res WHERE variant = 'without' AND round > 0) * 0.05 AS without_us_per_post;
