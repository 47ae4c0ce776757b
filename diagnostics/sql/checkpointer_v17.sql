-- Checkpointer (PostgreSQL 17+): checkpoint counters from
-- pg_stat_checkpointer joined with the background writer's own view (17
-- split them; buffers_backend is gone, see pg_stat_io). Cumulative: diff two
-- samples. No locks; one row, with the settings that decide when a checkpoint is
-- requested (max_wal_size) or timed (checkpoint_timeout).
SELECT c.num_timed::int8               AS checkpoints_timed,
       c.num_requested::int8           AS checkpoints_requested,
       c.write_time::float8            AS write_time_ms,
       c.sync_time::float8             AS sync_time_ms,
       c.buffers_written::int8         AS buffers_checkpoint,
       b.buffers_clean::int8           AS buffers_clean,
       b.maxwritten_clean::int8        AS maxwritten_clean,
       NULL::int8                      AS buffers_backend,
       b.buffers_alloc::int8           AS buffers_alloc,
       c.stats_reset                   AS stats_reset,
       b.stats_reset                   AS bgwriter_stats_reset,
       pg_size_bytes(current_setting('max_wal_size'))::int8 AS max_wal_size,
       extract(epoch FROM current_setting('checkpoint_timeout')::interval)::float8 AS checkpoint_timeout
FROM pg_stat_checkpointer AS c
CROSS JOIN pg_stat_bgwriter AS b
