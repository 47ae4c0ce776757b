-- StuckRunning: River jobs running longer than a bound: $1 is the
-- default (River rescues a job running past RescueStuckJobsAfter, 1 h by
-- default), and a kind whose completed jobs of the last day ran for a
-- 95th percentile p gets p × $2 (the margin) when that is shorter. Reads
-- the running jobs through river_job_prioritized_fetching_index and the
-- last day's completed jobs through river_job_state_and_finalized_at_index;
-- no locks. At most $3 jobs, the longest running first.
WITH usual AS (
    SELECT kind,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY extract(epoch FROM finalized_at - attempted_at)) AS p95_seconds,
           count(*) AS completed
    FROM river_job
    WHERE state = 'completed'
      AND finalized_at >= now() - interval '1 day'
      AND attempted_at IS NOT NULL
    GROUP BY kind
)
SELECT j.id, j.queue, j.kind, j.attempt, j.attempted_at,
       extract(epoch FROM now() - j.attempted_at)::float8 AS running_seconds,
       least($1::float8, coalesce(u.p95_seconds * $2::float8, $1::float8))::float8 AS limit_seconds,
       coalesce(u.p95_seconds, 0)::float8 AS usual_seconds,
       coalesce(j.attempted_by[cardinality(j.attempted_by)], '') AS client_id
FROM river_job j
LEFT JOIN usual u ON u.kind = j.kind AND u.completed >= 20
WHERE j.state = 'running'
  AND j.attempted_at IS NOT NULL
  AND extract(epoch FROM now() - j.attempted_at) > least($1::float8, coalesce(u.p95_seconds * $2::float8, $1::float8))
ORDER BY j.attempted_at
LIMIT $3
