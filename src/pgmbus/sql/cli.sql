-- Queries of the command line (pgmbus.cli) that no engine's client offers.

-- name: server_info
SELECT current_database() AS database, current_setting('server_version') AS server_version;
