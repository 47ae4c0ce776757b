-- Checkpointer (PostgreSQL 14 to 16): checkpoint and background-writer
-- counters, all in pg_stat_bgwriter before 17. Cumulative: diff two samples.
-- No locks; one row, with the settings that decide when a checkpoint is
-- requested (max_wal_size) or timed (checkpoint_timeout).
SELECT checkpoints_timed::int8         AS checkpoints_timed,
       checkpoints_req::int8           AS checkpoints_requested,
       checkpoint_write_time::float8   AS write_time_ms,
       checkpoint_sync_time::float8    AS sync_time_ms,
       buffers_checkpoint::int8        AS buffers_checkpoint,
       buffers_clean::int8             AS buffers_clean,
       maxwritten_clean::int8          AS maxwritten_clean,
       buffers_backend::int8           AS buffers_backend,
       buffers_alloc::int8             AS buffers_alloc,
       stats_reset                     AS stats_reset,
       stats_reset                     AS bgwriter_stats_reset,
       pg_size_bytes(current_setting('max_wal_size'))::int8 AS max_wal_size,
       extract(epoch FROM current_setting('checkpoint_timeout')::interval)::float8 AS checkpoint_timeout
FROM pg_stat_bgwriter
