-- SeedComplete: the textbook per-job completion ("seed" in the floor's
-- report: the plain queue statements the engine is compared with), fenced
-- by owner and generation; the floor sends one per claimed job, all of a
-- claim's in one pipelined batch.
UPDATE jobs
SET status = 'done',
    finished_at = clock_timestamp(),
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1
  AND status = 'running'
  AND lease_owner = $2
  AND lease_generation = $3
