-- JobRelease: hands a running job back to ready now without recording a
-- failure, fenced by owner and generation. Used at shutdown; when $4 is true
-- the job never started, so its claim's attempt is taken back. Row lock;
-- primary key.
UPDATE jobs
SET status = 'ready',
    available_at = clock_timestamp(),
    attempts = CASE WHEN $4::boolean THEN greatest(attempts - 1, 0) ELSE attempts END,
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1
  AND status = 'running'
  AND lease_owner = $2
  AND lease_generation = $3
