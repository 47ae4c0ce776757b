-- BenchRunning: running jobs of a bench queue, to see when the last ack
-- landed. No locks; jobs_running_lease_idx.
SELECT count(*) FROM jobs WHERE queue = $1 AND status = 'running'
