-- IOStats (PostgreSQL 16 and 17): cumulative I/O by backend type, object and
-- context from pg_stat_io, in bytes (blocks times op_bytes), busiest first:
-- tells bulkwrite (COPY), vacuum and checkpoint I/O apart (runbook step 5).
-- Time columns need track_io_timing. No locks; a few dozen rows.
SELECT backend_type,
       object,
       context,
       coalesce(reads, 0)::int8                       AS reads,
       coalesce(reads * op_bytes, 0)::int8            AS read_bytes,
       coalesce(read_time, 0)::float8                 AS read_time_ms,
       coalesce(writes, 0)::int8                      AS writes,
       coalesce(writes * op_bytes, 0)::int8           AS write_bytes,
       coalesce(write_time, 0)::float8                AS write_time_ms,
       coalesce(extends, 0)::int8                     AS extends,
       coalesce(extends * op_bytes, 0)::int8          AS extend_bytes,
       coalesce(writebacks, 0)::int8                  AS writebacks,
       coalesce(writeback_time, 0)::float8            AS writeback_time_ms,
       coalesce(fsyncs, 0)::int8                      AS fsyncs,
       coalesce(fsync_time, 0)::float8                AS fsync_time_ms,
       coalesce(hits, 0)::int8                        AS hits,
       coalesce(evictions, 0)::int8                   AS evictions,
       stats_reset
FROM pg_stat_io
WHERE coalesce(reads, 0) + coalesce(writes, 0) + coalesce(extends, 0)
      + coalesce(fsyncs, 0) + coalesce(hits, 0) > 0
ORDER BY coalesce(read_time, 0) + coalesce(write_time, 0)
         + coalesce(writeback_time, 0) + coalesce(fsync_time, 0) DESC,
         coalesce(reads, 0) + coalesce(writes, 0) DESC
