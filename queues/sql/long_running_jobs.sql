-- LongRunningJobs: running jobs that have run far longer than their kind
-- usually does: a worker that keeps renewing the lease of a stuck handler
-- hides it from the expired-lease check. A kind's usual run time is the 95th
-- percentile of its latest 200 run times, which the engine records in
-- job_kind_runs as jobs finish (a row per kind per acking statement, up to
-- 200 run times each), known once at least $2 of them exist; a job is
-- listed when it has run $3 times that and at least $1 seconds. The worst
-- 20 first. Walks jobs_running_lease_idx for running jobs and
-- job_kind_runs_kind_id_idx once per kind (usual is MATERIALIZED so that it
-- stays once per kind: inlined, the planner may join it per running job);
-- ACCESS SHARE on jobs and job_kind_runs.
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
        SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY d.seconds)::float8 AS usual_seconds,
               count(*)::int8 AS samples
        FROM (SELECT s.seconds
              FROM (SELECT r.id, r.seconds
                    FROM job_kind_runs AS r
                    WHERE r.kind = k.kind
                    ORDER BY r.id DESC
                    LIMIT 200) AS r
              CROSS JOIN LATERAL unnest(r.seconds) AS s(seconds)
              ORDER BY r.id DESC
              LIMIT 200) AS d
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
