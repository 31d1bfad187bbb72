-- claim 100 due timers (a 30 s claim), then record their calls as successful: pgmbus
-- timer_claim and timer_record (the results document a dispatcher sends, built here)
SELECT coalesce(jsonb_agg(jsonb_build_object(
           'id', id, 'attempt', attempt, 'dispatcher', 'bench', 'outcome', 'ok',
           'calls', jsonb_build_array(jsonb_build_object(
               'call', 1, 'started_at', now(), 'finished_at', now(), 'outcome', 'ok',
               'status_code', 200)))), '[]') AS results
FROM mbus.timer_claim('bench', :buckets::integer[], 100, 30)
\gset got_
SELECT mbus.timer_record(:got_results::jsonb);
