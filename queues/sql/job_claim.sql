-- JobClaim: leases up to $2 due ready jobs of queue $1 to owner $3 for $4
-- milliseconds, in priority order, bumping attempts and lease_generation (the
-- fencing token every later transition must present).
--
-- The claim size is also capped here by queue_settings: zero while the queue
-- is paused, and at most max_workers minus the jobs already running in the
-- queue (fleet-wide, every process). When max_workers is set the engine runs
-- this statement after pg_advisory_xact_lock(job_claim_lock_key, hashtext(queue))
-- in the same implicit transaction so claimers of a throttled queue count
-- running jobs one at a time, and says so in $8. A claimer that has not
-- taken the lock ($8 false: it has not yet seen the throttle, which it reads
-- once per poll interval) claims nothing from a queue with max_workers: two
-- such claims side by side would each count the other's jobs as not yet
-- running.
--
-- Keyset: ($5 priority, $6 available_at, $7 id) is the key of the last job
-- this claimer took (NULLs: start from the head). The pick resumes after it
-- within its priority level, then takes lower levels from their heads. The
-- head of jobs_ready_pick_idx is where the entries of claimed jobs pile up
-- until vacuum removes them, and while any snapshot holds the xmin horizon
-- none can even be marked dead, so a pick from the head visits the heap for
-- every job claimed since; resuming after the cursor skips them. A job that
-- commits with a key behind the cursor (a higher priority, an insert whose
-- transaction ran long) is taken when the claimer restarts from the head:
-- after a short claim or after a rescan interval (the engine's).
--
-- Locks: FOR UPDATE SKIP LOCKED on the picked rows (concurrent claimers skip
-- each other's rows instead of waiting). Index: jobs_ready_pick_idx for both
-- picks (an index range scan starting at the cursor for the first),
-- jobs_running_lease_idx for the running count, and the primary key for the
-- update: it matches id = ANY(ARRAY(picked)) rather than joining the CTEs,
-- because the planner cannot size a LIMIT taken from a subquery and may then
-- hash-join the whole table.
--
-- Returns the job columns except those the claim itself sets to what its
-- caller passed: queue ($1), status ('running') and lease_owner ($3), which
-- the engine fills in (jobDecoder). Sending them back cost the server an
-- output conversion per column and row and the engine a decode.
WITH settings AS (
    SELECT coalesce(bool_or(paused), false) AS paused, min(max_workers) AS max_workers
    FROM queue_settings
    WHERE queue = $1
), cap AS (
    SELECT CASE
               WHEN s.paused THEN 0
               WHEN s.max_workers IS NULL THEN $2::integer
               WHEN NOT $8::boolean THEN 0
               ELSE least($2::integer, greatest(0, s.max_workers - (
                   SELECT count(*) FROM jobs WHERE status = 'running' AND queue = $1)::integer))
           END AS n
    FROM settings s
), at_cursor AS (
    SELECT id
    FROM jobs
    WHERE queue = $1
      AND status = 'ready'
      AND priority = coalesce($5::smallint, 32767)
      AND (available_at, id) > (coalesce($6::timestamptz, '-infinity'), coalesce($7::bigint, 0))
      AND available_at <= clock_timestamp()
    ORDER BY priority DESC, available_at, id
    LIMIT (SELECT n FROM cap)
    FOR UPDATE SKIP LOCKED
), below_cursor AS (
    SELECT id
    FROM jobs
    WHERE queue = $1
      AND status = 'ready'
      AND priority < coalesce($5::smallint, 32767)
      AND available_at <= clock_timestamp()
    ORDER BY priority DESC, available_at, id
    LIMIT (SELECT n FROM cap) - (SELECT count(*) FROM at_cursor)
    FOR UPDATE SKIP LOCKED
)
UPDATE jobs AS j
SET status = 'running',
    lease_owner = $3,
    lease_until = clock_timestamp() + ($4::bigint * interval '1 millisecond'),
    lease_generation = j.lease_generation + 1,
    attempts = j.attempts + 1,
    started_at = clock_timestamp()
WHERE j.id = ANY (ARRAY(SELECT id FROM at_cursor UNION ALL SELECT id FROM below_cursor))
RETURNING j.id, j.kind, j.payload, j.priority, j.available_at, j.lease_until,
          j.lease_generation, j.attempts, j.max_attempts, j.last_error, j.error_class,
          j.errors, j.dedupe_key, j.tenant_id, j.created_at, j.started_at, j.finished_at
