-- DiscardedCount: how many River jobs are discarded ($1: queue, '' for
-- every queue), exactly, through river_job_state_and_finalized_at_index.
-- No locks.
SELECT count(*) AS discarded
FROM river_job
WHERE state = 'discarded'
  AND finalized_at IS NOT NULL
  AND ($1::text = '' OR queue = $1)
