-- scale_dead_counts: recounts dead_letter_counts from the dead jobs, after
-- scale's bulk load ran with the per-row counting triggers disabled (as
-- migration 013 counts the dead jobs it finds). Bench databases only.
INSERT INTO dead_letter_counts (queue, error_class, dead)
SELECT queue, coalesce(error_class, ''), count(*)
FROM jobs
WHERE status = 'dead'
GROUP BY 1, 2
