-- scale_done: finished jobs $1..$2 of scale's table, the history in the
-- middle, spread over 100 queues and finished over the last day ($3 of
-- them in all). Bench databases only.
INSERT INTO jobs (queue, kind, status, attempts, lease_generation, created_at, available_at, started_at, finished_at)
SELECT 'scale-' || (g % 100), 'noop', 'done', 1, 1, t, t, t, t + interval '5 milliseconds'
FROM generate_series($1::int8, $2::int8) AS g,
     LATERAL (SELECT now() - interval '1 day' + (g::float8 / $3) * interval '1 day' AS t) AS k
