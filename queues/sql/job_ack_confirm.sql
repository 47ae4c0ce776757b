-- JobAckConfirm: after an ack statement failed in flight and its retry did
-- not match some jobs, finds those among $1 (generations $2) that are done
-- at the very generation this worker held: the failed statement committed
-- and only its reply was lost. A job taken over since carries a higher
-- generation and is not confirmed. No locks; one index probe per id (the
-- arrays are read through scalar subqueries so that the planner cannot size
-- them, as in job_ack_many.sql: told the size, it read every done job).
SELECT j.id
FROM unnest((SELECT $1::bigint[]), (SELECT $2::bigint[])) AS a(id, generation)
JOIN jobs AS j ON j.id = a.id AND j.lease_generation = a.generation
WHERE j.status = 'done'
