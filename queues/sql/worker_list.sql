-- WorkerList: every engine process in the registry, newest heartbeat first;
-- stale is true when the row has not been heartbeated for 30 seconds or the
-- process stopped. reclaimed_at is set when another process found the
-- worker dead (stale heartbeat, session gone) and took its jobs back before
-- their leases expired. session_open says whether the session the worker
-- recorded (backend_pid, started at backend_started_at) is on the server
-- now: with the heartbeat, the evidence that the process is alive (a
-- paused process keeps its session; a killed one loses it). No locks; seq
-- scans of the small workers table and of pg_stat_activity.
SELECT w.id, w.host, w.pid, w.queues, w.concurrency, w.in_flight, w.in_flight_by_queue, w.version,
       w.started_at, w.last_seen_at, w.stopped_at,
       (w.stopped_at IS NOT NULL OR w.last_seen_at < clock_timestamp() - interval '30 seconds') AS stale,
       w.backend_pid, w.reclaimed_at, w.reclaimed_jobs, w.recent_errors,
       (w.backend_pid IS NOT NULL AND EXISTS (
           SELECT 1 FROM pg_stat_activity a
           WHERE a.pid = w.backend_pid
             -- backend_start is NULL for another role's sessions without
             -- pg_read_all_stats: the pid alone then counts.
             AND (a.backend_start IS NULL OR a.backend_start = w.backend_started_at))) AS session_open
FROM workers AS w
ORDER BY w.last_seen_at DESC, w.id
