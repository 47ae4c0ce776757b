-- WorkerDeadMark: finds the workers that are dead, not slow, and marks them
-- stopped and reclaimed: the heartbeat is stale (three of the worker's own
-- heartbeat intervals, at least $1 milliseconds) and the session it recorded
-- on this server (backend_started_at after the server started, so a
-- restart makes no worker look dead) is gone from pg_stat_activity. A
-- stopped (SIGSTOP) or stalled process keeps its session and its leases.
-- Returns the ids whose jobs JobReclaimDead takes back. Row locks on the
-- marked rows (a concurrent marker skips them); seq scan of the small
-- workers table and of pg_stat_activity.
UPDATE workers AS w
SET stopped_at = clock_timestamp(),
    reclaimed_at = clock_timestamp(),
    reclaimed_jobs = 0
WHERE w.id IN (
    SELECT id FROM workers
    WHERE stopped_at IS NULL
      AND backend_pid IS NOT NULL
      AND backend_started_at >= pg_postmaster_start_time()
      AND last_seen_at < clock_timestamp() - greatest(3 * heartbeat_ms, $1::integer) * interval '1 millisecond'
    FOR UPDATE SKIP LOCKED
)
  AND NOT EXISTS (
    SELECT 1 FROM pg_stat_activity a
    WHERE a.pid = w.backend_pid
      -- backend_start is NULL for another role's sessions without
      -- pg_read_all_stats: the pid alone then keeps the worker alive.
      AND (a.backend_start IS NULL OR a.backend_start = w.backend_started_at)
)
RETURNING w.id
