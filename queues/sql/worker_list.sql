-- WorkerList: every engine process in the registry (at most 1000), newest
-- heartbeat first, with its heartbeat age, in-flight jobs and the last
-- engine errors it reported in its heartbeat (a claim or ack that failed,
-- with its SQLSTATE).
-- alive is the one definition of a live worker: not stopped and
-- heartbeated within the last $1 seconds. A process that stopped
-- heartbeating (killed, SIGSTOPped, stalled) is not alive, whatever its
-- session: it works no job. session_open says whether the session the
-- worker recorded (backend_pid, started at backend_started_at) is on the
-- server now: the evidence beside the heartbeat that tells a dead process
-- (session gone) from a paused one (session kept). reclaimed_at is when
-- another process found the worker dead (stale heartbeat, session gone)
-- and took its running jobs back before their leases expired;
-- reclaimed_jobs how many.
-- NULL: stopped_at, backend_pid and reclaimed_at are pointers.
-- No locks; seq scans of the small workers table and of pg_stat_activity.
SELECT w.id, w.host, w.pid, w.queues, w.concurrency, w.in_flight, w.in_flight_by_queue, w.version,
       w.started_at, w.last_seen_at, w.stopped_at,
       extract(epoch FROM clock_timestamp() - w.last_seen_at)::float8 AS last_seen_seconds,
       (w.stopped_at IS NULL
        AND w.last_seen_at > clock_timestamp() - make_interval(secs => $1)) AS alive,
       w.backend_pid, w.reclaimed_at, w.reclaimed_jobs, w.recent_errors,
       (w.backend_pid IS NOT NULL AND EXISTS (
           SELECT 1 FROM pg_stat_activity a
           WHERE a.pid = w.backend_pid
             -- backend_start is NULL for another role's sessions without
             -- pg_read_all_stats: the pid alone then counts.
             AND (a.backend_start IS NULL OR a.backend_start = w.backend_started_at))) AS session_open
FROM workers AS w
ORDER BY w.last_seen_at DESC, w.id
LIMIT 1000
