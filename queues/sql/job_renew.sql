-- JobRenew: extends the lease of one running job by $4 ms from now, fenced by
-- owner and generation; a non-owner or a stale generation matches no row.
-- Row lock on the job; primary key.
UPDATE jobs
SET lease_until = clock_timestamp() + ($4::bigint * interval '1 millisecond')
WHERE id = $1
  AND status = 'running'
  AND lease_owner = $2
  AND lease_generation = $3
