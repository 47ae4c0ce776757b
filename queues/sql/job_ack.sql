-- JobAck: marks one running job done, fenced by owner and generation: a
-- worker whose lease expired (and was possibly taken over) matches no row and
-- gets ErrLeaseLost. Row lock on the job; primary key.
UPDATE jobs
SET status = 'done',
    finished_at = clock_timestamp(),
    lease_owner = NULL,
    lease_until = NULL
WHERE id = $1
  AND status = 'running'
  AND lease_owner = $2
  AND lease_generation = $3
