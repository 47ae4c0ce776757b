-- JobAckMany: marks a batch of running jobs done in one statement, each
-- fenced by (owner, its own generation). Returns the ids that matched; the
-- others were stale (lease lost). Row locks on the matched jobs, taken in id
-- order so concurrent batches cannot deadlock.
--
-- Plan: a nested loop over the sorted ids probing the primary key. The
-- status test is written `IS TRUE` (the same on a NOT NULL column) so the
-- planner cannot answer it from jobs_running_lease_idx instead: estimated
-- from statistics taken while few jobs ran, a scan of that whole partial
-- index looks cheaper than the probes, and that index holds an entry for
-- every job claimed since the last vacuum (all of them while a snapshot
-- holds the xmin horizon). The arrays are read through scalar subqueries
-- so that the planner cannot see how many ids the batch holds, even when it
-- plans for these very values: told the size, and taking the running jobs
-- of an owner the statistics have never seen (or a table never analyzed)
-- for about one row, it scanned the whole table once and compared every
-- row with every id, hundreds of milliseconds per batch. Not knowing the
-- size, it probes. TestHotStatementPlans and TestBatchPlansWithoutStatistics
-- check the plan.
WITH acks AS (
    SELECT * FROM unnest((SELECT $1::bigint[]), (SELECT $2::bigint[])) AS a(id, generation)
    ORDER BY id
)
UPDATE jobs AS j
SET status = 'done',
    finished_at = clock_timestamp(),
    lease_owner = NULL,
    lease_until = NULL
FROM acks
WHERE j.id = acks.id
  AND (j.status = 'running') IS TRUE
  AND j.lease_owner = $3
  AND j.lease_generation = acks.generation
RETURNING j.id
