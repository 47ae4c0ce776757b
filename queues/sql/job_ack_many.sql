-- JobAckMany: marks a batch of running jobs done in one statement, each
-- fenced by (owner, its own generation). Returns the ids that matched; the
-- others were stale (lease lost). Row locks on the matched jobs, taken in id
-- order so concurrent batches cannot deadlock; primary key.
WITH acks AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS a(id, generation)
    ORDER BY id
)
UPDATE jobs AS j
SET status = 'done',
    finished_at = clock_timestamp(),
    lease_owner = NULL,
    lease_until = NULL
FROM acks
WHERE j.id = acks.id
  AND j.status = 'running'
  AND j.lease_owner = $3
  AND j.lease_generation = acks.generation
RETURNING j.id
