-- WALStats (PostgreSQL 14 to 17): cumulative WAL counters since stats_reset.
-- Only deltas mean anything: the sampler diffs two samples and treats a
-- changed stats_reset as a reset. No locks; one row.
SELECT wal_records::int8,
       wal_fpi::int8,
       wal_bytes::int8,
       wal_buffers_full::int8,
       wal_write::int8                  AS wal_write,
       wal_sync::int8                   AS wal_sync,
       wal_write_time::float8           AS wal_write_time_ms,
       wal_sync_time::float8            AS wal_sync_time_ms,
       stats_reset
FROM pg_stat_wal
