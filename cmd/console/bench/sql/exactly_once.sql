-- exactly_once: a burn queue's rows, and how many are done after one
-- attempt and one lease with a finish time. $1 queue. Scans the queue's rows
-- (bench databases only); no locks.
SELECT count(*),
       count(*) FILTER (WHERE status = 'done' AND attempts = 1 AND lease_generation = 1 AND finished_at IS NOT NULL)
FROM jobs
WHERE queue = $1
