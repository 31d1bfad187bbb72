-- Queries of the replication state (pgmbus.data.replication): `pgmbus status` and /metrics.

-- name: replication_state
-- One JSON document: is this server a standby, what it requires of its standbys
-- (synchronous_standby_names, synchronous_commit), on a standby how far behind its replay is,
-- and on a primary each standby's state, sync state and replay lag. pg_current_wal_lsn() is
-- only called on a primary (it raises during recovery).
SELECT json_build_object(
    'in_recovery', pg_is_in_recovery(),
    'synchronous_standby_names', current_setting('synchronous_standby_names'),
    'synchronous_commit', current_setting('synchronous_commit'),
    'replay_delay_s', CASE WHEN pg_is_in_recovery()
                           THEN extract(epoch FROM now() - pg_last_xact_replay_timestamp())
                      END,
    'standbys', coalesce((
        SELECT json_agg(json_build_object(
                   'name', r.application_name,
                   'state', r.state,
                   'sync_state', r.sync_state,
                   'replay_lag_s', coalesce(extract(epoch FROM r.replay_lag), 0),
                   'replay_behind_bytes', CASE WHEN NOT pg_is_in_recovery()
                                               THEN pg_wal_lsn_diff(pg_current_wal_lsn(),
                                                                    r.replay_lsn)
                                          END)
               ORDER BY r.application_name)
        FROM pg_stat_replication AS r), '[]'::json)
) AS state;
