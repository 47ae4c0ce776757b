-- JobList: a page of jobs, newest first, filtered by queue, kind, status,
-- error class and created_at range, keyset-paginated by id ($7: only ids
-- below it; 0 for the first page). It reads only the columns the list shows,
-- with last_error cut to 1,000 characters: payloads and error histories can
-- be megabytes each, and a page of them must not be loaded for a table.
-- No locks. Each filter walks an index in id order and stops after a page:
-- the primary key backwards (ids grow with time) with no status or class;
-- jobs_ready_pick_idx / jobs_running_lease_idx for ready and running jobs
-- (bounded by the backlog and the fleet); jobs_done_id_idx for done jobs
-- (the newest rows are the backlog, which a walk of the primary key would
-- read first); jobs_dead_id_idx, jobs_dead_class_id_idx and
-- jobs_dead_queue_class_id_idx for dead jobs, of a class, of a queue's
-- class (a dead job is among the oldest rows); jobs_error_class_id_idx for
-- a class with no status. Optional filters are written "$n = '' OR ...",
-- so only custom plans (which fold them away) can use these partial
-- indexes; PostgreSQL keeps custom plans for it, as the generic one costs
-- far more.
SELECT id, queue, kind, status, available_at, attempts, max_attempts,
       left(last_error, 1000) AS last_error, error_class, created_at, started_at, finished_at
FROM jobs
WHERE ($1::text = '' OR queue = $1)
  AND ($2::text = '' OR kind = $2)
  AND ($3::text = '' OR status = $3)
  AND ($4::text = '' OR error_class = $4)
  AND ($5::timestamptz IS NULL OR created_at >= $5)
  AND ($6::timestamptz IS NULL OR created_at < $6)
  AND ($7::bigint = 0 OR id < $7)
ORDER BY id DESC
LIMIT $8
