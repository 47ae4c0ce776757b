-- unfinished: a bench queue's ready and running jobs, counted through the
-- partial indexes jobs_ready_pick_idx and jobs_running_lease_idx (never the
-- finished history). $1 queue. No locks.
SELECT (SELECT count(*) FROM jobs WHERE status = 'ready' AND queue = $1)
     + (SELECT count(*) FROM jobs WHERE status = 'running' AND queue = $1)
