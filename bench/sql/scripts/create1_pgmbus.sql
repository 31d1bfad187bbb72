-- create 1 timer per transaction (due in an hour): pgmbus timer_create
\set k random(1, 1000000000000000)
SELECT created, callback FROM mbus.timer_create(:tclient, 'g', 'e' || :k, now() + interval '1 hour',
                                                'http://127.0.0.1:9/cb');
