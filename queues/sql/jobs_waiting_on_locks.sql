-- JobsWaitingOnLocks: running jobs whose own session waits on a lock (runbook step
-- 4). A job's session is the one queues.JobConn lent it, named
-- "console-worker job=<id>" in application_name; its queue and kind come
-- from jobs by primary key, so a root finding lists the jobs that suffer
-- behind it. Only this database's sessions: another database on the server
-- may run the engine too, and its job 7 is not this one's. Longest wait first, at most 200.
-- ACCESS SHARE on jobs (a LOCK TABLE jobs makes this check wait, and say
-- who holds the lock); reads pg_stat_activity and pg_locks.
-- NULL-safe: a job whose row is gone (archived while its session still
-- waits) reads queue and kind as ''; a wait with no waitstart (fast-path)
-- counts from the session's last state change.
WITH s AS (
    SELECT a.pid,
           substring(a.application_name FROM '^console-worker job=([0-9]{1,18})$')::int8 AS job_id,
           a.state_change
    FROM pg_stat_activity AS a
    WHERE a.wait_event_type = 'Lock'
      AND a.datname = current_database()
      AND a.application_name LIKE 'console-worker job=%'
)
SELECT s.job_id,
       coalesce(j.queue, '')                                                AS queue,
       coalesce(j.kind, '')                                                 AS kind,
       s.pid,
       coalesce(extract(epoch FROM clock_timestamp() - coalesce(
           (SELECT min(l.waitstart) FROM pg_locks AS l WHERE l.pid = s.pid AND NOT l.granted),
           s.state_change)), 0)::float8                                     AS wait_seconds
FROM s
LEFT JOIN jobs AS j ON j.id = s.job_id
WHERE s.job_id IS NOT NULL
ORDER BY wait_seconds DESC, s.job_id
LIMIT 200
