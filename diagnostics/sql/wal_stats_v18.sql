-- WALStats (PostgreSQL 18+): cumulative WAL counters since stats_reset.
-- PostgreSQL 18 moved write/sync counts and times to pg_stat_io, so those
-- columns are NULL here. No locks; one row.
SELECT wal_records::int8,
       wal_fpi::int8,
       wal_bytes::int8,
       wal_buffers_full::int8,
       NULL::int8                       AS wal_write,
       NULL::int8                       AS wal_sync,
       NULL::float8                     AS wal_write_time_ms,
       NULL::float8                     AS wal_sync_time_ms,
       stats_reset
FROM pg_stat_wal
