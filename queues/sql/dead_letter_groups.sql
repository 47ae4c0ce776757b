-- DeadLetterGroups: the $2 largest groups of dead jobs by queue and
-- error_class ($1 = '' for every queue), with their counts, first/last
-- death and the newest dead job with its error (cut to 1,000 characters)
-- as a sample, all read from dead_letter_counts: one row per class, kept
-- exact by triggers on jobs in the same transaction as each death or
-- requeue. The cost follows the number of classes, never the dead jobs or
-- the depth of the jobs indexes: jobs is not read. No locks beyond ACCESS
-- SHARE.
SELECT queue, error_class, dead AS count,
       coalesce(first_finished_at, now()) AS first_seen,
       coalesce(last_finished_at, now()) AS last_seen,
       coalesce(sample_error, '') AS sample_error, coalesce(sample_job_id, 0) AS sample_job_id
FROM dead_letter_counts
WHERE $1::text = '' OR queue = $1
ORDER BY dead DESC, queue, error_class
LIMIT $2
