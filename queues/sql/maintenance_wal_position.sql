-- maintenanceWALPosition: the primary's current WAL position in bytes and
-- the largest replay lag of any connected standby in bytes, sampled between
-- maintenance batches to compute the WAL rate and decide whether to pause.
-- Locks: none. Reads pg_stat_replication (needs pg_monitor to see lag).
SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint AS wal_bytes,
       coalesce((SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), coalesce(replay_lsn, flush_lsn, write_lsn)))
                 FROM pg_stat_replication), 0)::bigint AS replica_lag_bytes
