-- JobListUnfinished: a page of the jobs not finished yet, oldest first (by
-- id), so the job that has run or waited longest leads. $8, $9 and $10
-- choose the states: running, due (ready with available_at passed, by the
-- clock the claim reads) and scheduled (ready for later). Filtered like
-- job_list by queue, kind, error class and created_at range, keyset-paginated by id
-- ($6: only ids above it; 0 for the first page). Same columns as job_list,
-- plus started_at and lease_until for "running for".
-- No locks. Each branch names its status as a constant, so its partial
-- index (jobs_running_lease_idx, bounded by the fleet; jobs_ready_pick_idx,
-- bounded by the backlog) serves it in custom and generic plans alike and
-- no done or dead row is read. A branch sorts by id + 0 so that the planner
-- never walks the primary key upwards from the oldest rows, which are done
-- and dead jobs, looking for a page of unfinished ones.
SELECT id, queue, kind, status, available_at, attempts, max_attempts, last_error, error_class,
       created_at, started_at, lease_until
FROM (
    (SELECT id, queue, kind, status, available_at, attempts, max_attempts,
            left(last_error, 1000) AS last_error, error_class, created_at, started_at, lease_until
     FROM jobs
     WHERE status = 'running' AND $8::boolean
       AND ($1::text = '' OR queue = $1)
       AND ($2::text = '' OR kind = $2)
       AND ($3::text = '' OR error_class = $3)
       AND ($4::timestamptz IS NULL OR created_at >= $4)
       AND ($5::timestamptz IS NULL OR created_at < $5)
       AND ($6::bigint = 0 OR id > $6)
     ORDER BY id + 0
     LIMIT $7)
    UNION ALL
    (SELECT id, queue, kind, status, available_at, attempts, max_attempts,
            left(last_error, 1000) AS last_error, error_class, created_at, started_at, lease_until
     FROM jobs
     WHERE status = 'ready'
       AND (($9::boolean AND available_at <= clock_timestamp()) OR ($10::boolean AND available_at > clock_timestamp()))
       AND ($1::text = '' OR queue = $1)
       AND ($2::text = '' OR kind = $2)
       AND ($3::text = '' OR error_class = $3)
       AND ($4::timestamptz IS NULL OR created_at >= $4)
       AND ($5::timestamptz IS NULL OR created_at < $5)
       AND ($6::bigint = 0 OR id > $6)
     ORDER BY id + 0
     LIMIT $7)
) AS unfinished
ORDER BY id
LIMIT $7
