-- scale_dead_counts: recounts dead_letter_counts from the dead jobs, after
-- scale's bulk load ran with the per-row counting triggers disabled (as
-- migration 013 counts the dead jobs it finds), with each class's first and
-- last death and sample read as migration 016 reads them. Bench databases
-- only.
INSERT INTO dead_letter_counts (queue, error_class, dead, first_finished_at, last_finished_at, sample_job_id, sample_error)
SELECT g.queue, g.error_class, g.dead, e.first_finished_at, e.last_finished_at, e.sample_job_id, e.sample_error
FROM (SELECT queue, coalesce(error_class, '') AS error_class, count(*) AS dead
      FROM jobs
      WHERE status = 'dead'
      GROUP BY 1, 2) AS g
CROSS JOIN LATERAL dead_letter_class_edges(g.queue, g.error_class) AS e
