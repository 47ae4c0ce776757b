-- LongRunningJobs: running jobs that have run far longer than their kind
-- usually does: a worker that keeps renewing the lease of a stuck handler
-- hides it from the expired-lease check. A kind's usual run time is the 95th
-- percentile of its latest 200 done jobs (finished_at - started_at), known
-- once at least $2 of them exist; a job is listed when it has run $3 times
-- that and at least $1 seconds. The worst 20 first. Walks
-- jobs_running_lease_idx for running jobs and jobs_done_kind_idx once per
-- kind (usual is MATERIALIZED so that it stays once per kind: inlined, the
-- planner may join it per running job, 200 done jobs read for each);
-- ACCESS SHARE on jobs.
WITH running AS (
    SELECT id, queue, kind, coalesce(lease_owner, '') AS lease_owner, started_at, attempts,
           extract(epoch FROM clock_timestamp() - started_at)::float8 AS running_seconds
    FROM jobs
    WHERE status = 'running'
      AND started_at < clock_timestamp() - make_interval(secs => $1)
    LIMIT 10000
), usual AS MATERIALIZED (
    SELECT k.kind, u.usual_seconds, u.samples
    FROM (SELECT DISTINCT kind FROM running) AS k
    CROSS JOIN LATERAL (
        SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM d.finished_at - d.started_at))::float8 AS usual_seconds,
               count(*)::int8 AS samples
        FROM (SELECT j.finished_at, j.started_at
              FROM jobs AS j
              WHERE j.status = 'done' AND j.kind = k.kind
              ORDER BY j.finished_at DESC
              LIMIT 200) AS d
        WHERE d.started_at IS NOT NULL
    ) AS u
)
SELECT r.id AS job_id, r.queue, r.kind, r.lease_owner, r.started_at, r.attempts,
       r.running_seconds, u.usual_seconds, u.samples
FROM running AS r
JOIN usual AS u USING (kind)
WHERE u.samples >= $2
  AND r.running_seconds >= $3 * u.usual_seconds
ORDER BY r.running_seconds / greatest(u.usual_seconds, 0.001) DESC, r.id
LIMIT 20
