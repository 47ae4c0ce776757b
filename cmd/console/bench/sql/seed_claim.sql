-- SeedClaim: the textbook SKIP LOCKED claim ("seed" in the floor's report:
-- the plain queue statements the engine is compared with), kept for the
-- floor's comparison only: the pick always walks jobs_ready_pick_idx from
-- the head of the queue and joins the picked ids; it returns only what a
-- plain worker reads. $1 queue, $2 limit, $3 owner, $4 lease in ms.
WITH picked AS (
    SELECT id
    FROM jobs
    WHERE queue = $1
      AND status = 'ready'
      AND available_at <= clock_timestamp()
    ORDER BY priority DESC, available_at, id
    FOR UPDATE SKIP LOCKED
    LIMIT $2
)
UPDATE jobs AS j
SET status = 'running',
    lease_owner = $3,
    lease_until = clock_timestamp() + ($4 * interval '1 millisecond'),
    lease_generation = j.lease_generation + 1,
    attempts = j.attempts + 1,
    started_at = clock_timestamp()
FROM picked
WHERE j.id = picked.id
RETURNING j.id, j.payload, j.attempts, j.max_attempts, j.lease_generation
