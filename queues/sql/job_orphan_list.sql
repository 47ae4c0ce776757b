-- JobOrphanList: the jobs the database says owner $1 holds that it claimed
-- more than $2 milliseconds ago (longer than any claim statement of its may
-- still be in flight). The engine runs it after a reconnect and releases
-- those it is not running: claims whose commit went through but whose reply
-- was lost. No locks; jobs_running_lease_idx (running jobs only).
SELECT id, lease_generation
FROM jobs
WHERE status = 'running'
  AND lease_owner = $1
  AND started_at < clock_timestamp() - $2::bigint * interval '1 millisecond'
