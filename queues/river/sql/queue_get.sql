-- QueueGet: one River queue's row in river_queue (its name and when it was
-- paused, NULL when it is not) with its available jobs counted through
-- river_job_prioritized_fetching_index (state, queue). No locks. No row
-- when River never recorded the queue (no client worked it).
SELECT q.name, q.paused_at,
       (SELECT count(*) FROM river_job j WHERE j.state = 'available' AND j.queue = q.name) AS available
FROM river_queue q
WHERE q.name = $1
