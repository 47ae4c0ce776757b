-- queue_id_range: the first and last id and the number of a bench queue's
-- jobs, to check a fill gave contiguous ids. $1 queue. Scans the queue's
-- rows (bench databases only); no locks.
SELECT coalesce(min(id), 0), coalesce(max(id), 0), count(*) FROM jobs WHERE queue = $1
