-- scale_kind_runs: the run times a live engine would have recorded for the
-- kind of scale's jobs (noop, 5 ms each), at their worst for a reader: one
-- job per acking statement, so the 200 newest run times take 200 rows, plus
-- the 64 rows a prune may leave behind. Bench databases only.
INSERT INTO job_kind_runs (kind, seconds)
SELECT 'noop', ARRAY[0.005::float8] FROM generate_series(1, 264)
