-- WorkerList: every engine process in the registry, newest heartbeat first;
-- stale is true when the row has not been heartbeated for 30 seconds or the
-- process stopped. reclaimed_at is set when another process found the
-- worker dead (stale heartbeat, session gone) and took its jobs back before
-- their leases expired. No locks; seq scan of the small workers table.
SELECT id, host, pid, queues, concurrency, in_flight, in_flight_by_queue, version,
       started_at, last_seen_at, stopped_at,
       (stopped_at IS NOT NULL OR last_seen_at < clock_timestamp() - interval '30 seconds') AS stale,
       backend_pid, reclaimed_at, reclaimed_jobs, recent_errors
FROM workers
ORDER BY last_seen_at DESC, id
