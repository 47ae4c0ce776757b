-- ClientList: the River clients working jobs now, from the running jobs
-- (the last entry of attempted_by is the client that works the attempt),
-- with their queues, how many jobs each runs and when it started its
-- newest. River keeps no heartbeat per client in its tables, so a client
-- that runs nothing is not listed. Reads river_job_prioritized_fetching_index
-- (state = 'running'). No locks. A job without attempted_by (inserted as
-- running by hand) counts under client ''.
SELECT coalesce(attempted_by[cardinality(attempted_by)], '') AS client_id,
       array_agg(DISTINCT queue ORDER BY queue) AS queues,
       count(*) AS running,
       max(attempted_at) AS newest_attempt_at
FROM river_job
WHERE state = 'running'
GROUP BY 1
ORDER BY 1
