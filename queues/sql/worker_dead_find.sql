-- WorkerDeadFind: the workers that look dead, not slow: the heartbeat is
-- stale (three of the worker's own heartbeat intervals, at least $1
-- milliseconds) and the session it recorded on this server
-- (backend_started_at after the server started, so a restart makes no
-- worker look dead) is gone from pg_stat_activity. A stopped (SIGSTOP) or
-- stalled process keeps its session and its leases. Also returns when this
-- server started: WorkerDeadMark marks only on the same server, a moment
-- later. Reads only; seq scans of the small workers table and of
-- pg_stat_activity.
SELECT w.id, pg_postmaster_start_time() AS server_started_at
FROM workers AS w
WHERE w.stopped_at IS NULL
  AND w.backend_pid IS NOT NULL
  AND w.backend_started_at >= pg_postmaster_start_time()
  AND w.last_seen_at < clock_timestamp() - greatest(3 * w.heartbeat_ms, $1::integer) * interval '1 millisecond'
  AND NOT EXISTS (
    SELECT 1 FROM pg_stat_activity a
    WHERE a.pid = w.backend_pid
      -- backend_start is NULL for another role's sessions without
      -- pg_read_all_stats: the pid alone then keeps the worker alive.
      AND (a.backend_start IS NULL OR a.backend_start = w.backend_started_at)
)
ORDER BY w.id
