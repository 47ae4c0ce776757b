-- delete_queue_jobs: removes a bench phase's jobs. $1 queue. Row locks on
-- them; scans the queue's rows (bench databases only).
DELETE FROM jobs WHERE queue = $1
