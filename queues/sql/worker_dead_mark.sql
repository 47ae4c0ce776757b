-- WorkerDeadMark: marks stopped and reclaimed the workers among $2 (found
-- by WorkerDeadFind a moment before, on the server that started at $3)
-- that still look dead: every condition of WorkerDeadFind is tested again,
-- and the server must not have restarted since. Looking twice keeps a
-- shutting-down server from making a live worker look dead: a fast or
-- immediate shutdown ends every session, not all at the same instant, so a
-- look taken then can see one gone while its own session lives; by the
-- second look its own session is gone too, or the server has restarted.
-- Returns the ids whose jobs JobReclaimDead takes back. Row locks on the
-- marked rows (a concurrent marker skips them); primary key on workers,
-- seq scan of pg_stat_activity.
UPDATE workers AS w
SET stopped_at = clock_timestamp(),
    reclaimed_at = clock_timestamp(),
    reclaimed_jobs = 0
WHERE w.id IN (
    SELECT id FROM workers
    WHERE id = ANY ($2::text[])
      AND pg_postmaster_start_time() = $3::timestamptz
      AND stopped_at IS NULL
      AND backend_pid IS NOT NULL
      AND backend_started_at >= pg_postmaster_start_time()
      AND last_seen_at < clock_timestamp() - greatest(3 * heartbeat_ms, $1::integer) * interval '1 millisecond'
    FOR UPDATE SKIP LOCKED
)
  AND NOT EXISTS (
    SELECT 1 FROM pg_stat_activity a
    WHERE a.pid = w.backend_pid
      AND (a.backend_start IS NULL OR a.backend_start = w.backend_started_at)
)
RETURNING w.id
