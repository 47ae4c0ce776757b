-- DeadLetterGroups: the $2 largest groups of dead jobs by queue and
-- error_class ($1 = '' for every queue), with their counts, first/last
-- death and the newest error as a sample. The groups and their exact counts
-- come from dead_letter_counts (one row per class, kept by triggers on
-- jobs), so the cost follows the number of classes, not of dead jobs; each
-- shown group then costs two probes of jobs_dead_idx (queue, error_class,
-- finished_at): its oldest and its newest death (the group '' also reads
-- the jobs whose error_class IS NULL). No locks beyond ACCESS SHARE.
SELECT c.queue, c.error_class, c.dead AS count,
       coalesce(least(
           (SELECT min(j.finished_at) FROM jobs AS j
            WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class = c.error_class),
           (SELECT min(j.finished_at) FROM jobs AS j
            WHERE c.error_class = '' AND j.status = 'dead' AND j.queue = c.queue AND j.error_class IS NULL)),
           now()) AS first_seen,
       coalesce(l.finished_at, now()) AS last_seen,
       coalesce(l.last_error, '') AS sample_error, coalesce(l.id, 0) AS sample_job_id
FROM (
    SELECT queue, error_class, dead
    FROM dead_letter_counts
    WHERE $1::text = '' OR queue = $1
    ORDER BY dead DESC, queue, error_class
    LIMIT $2
) AS c
LEFT JOIN LATERAL (
    SELECT s.id, s.finished_at, s.last_error
    FROM ((SELECT j.id, j.finished_at, j.last_error FROM jobs AS j
           WHERE j.status = 'dead' AND j.queue = c.queue AND j.error_class = c.error_class
           ORDER BY j.finished_at DESC LIMIT 1)
          UNION ALL
          (SELECT j.id, j.finished_at, j.last_error FROM jobs AS j
           WHERE c.error_class = '' AND j.status = 'dead' AND j.queue = c.queue AND j.error_class IS NULL
           ORDER BY j.finished_at DESC LIMIT 1)) AS s
    ORDER BY s.finished_at DESC
    LIMIT 1
) AS l ON true
ORDER BY c.dead DESC, c.queue, c.error_class
