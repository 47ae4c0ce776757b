-- ServerInfo: version, role and the settings the catalog depends on, to
-- choose version-specific queries and show primary or standby in the top
-- bar; re-read every 30s (Config.ServerInfoMaxAge) to follow a failover. No
-- locks.
SELECT current_setting('server_version_num')::int4                  AS version_num,
       current_setting('server_version')                            AS version,
       pg_is_in_recovery()                                          AS in_recovery,
       current_database()::text                                     AS database,
       EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements') AS has_pg_stat_statements,
       current_setting('track_io_timing')                           AS track_io_timing,
       current_setting('max_slot_wal_keep_size')                    AS max_slot_wal_keep_size,
       pg_backend_pid()                                             AS pid
