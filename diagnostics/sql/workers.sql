-- Workers: engine processes registered in the workers table with their
-- heartbeat age, in-flight jobs and the last engine errors each reported in
-- its heartbeat (a claim or ack that failed, with its SQLSTATE); alive means
-- not stopped and heartbeated within $1 seconds (runbook step 7).
-- reclaimed_at is when another process found the worker dead (heartbeat
-- stale, session gone from the server) and took its running jobs back
-- without waiting for their leases; reclaimed_jobs how many. Small table;
-- takes ACCESS SHARE on workers.
SELECT id,
       host,
       pid,
       queues,
       concurrency,
       in_flight,
       version,
       started_at,
       last_seen_at,
       stopped_at,
       recent_errors,
       reclaimed_at,
       reclaimed_jobs,
       extract(epoch FROM clock_timestamp() - last_seen_at)::float8              AS last_seen_seconds,
       (stopped_at IS NULL
        AND last_seen_at > clock_timestamp() - make_interval(secs => $1))        AS alive
FROM workers
ORDER BY last_seen_at DESC
LIMIT 1000
