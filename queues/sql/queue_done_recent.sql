-- QueueDoneRecent: how many of the newest $2 done jobs are in queue $1. A
-- queue whose jobs are all done has no row in queue_job_counts, the dead
-- letter counts or QueueHealth; this says it exists, and about how much it
-- did lately, at a cost bounded by $2 whatever the history.
-- No locks. Index: jobs_done_id_idx, walked backwards for $2 entries.
SELECT count(*) FILTER (WHERE d.queue = $1)::int8
FROM (
    SELECT queue FROM jobs
    WHERE status = 'done'
    ORDER BY id DESC
    LIMIT $2
) AS d
