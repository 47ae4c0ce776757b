-- scale_done: $1 finished jobs for scale's table, the history in the
-- middle, one every 10 ms over the last day. Bench databases only.
INSERT INTO jobs (queue, kind, status, attempts, lease_generation, created_at, available_at, started_at, finished_at)
SELECT 'scale-' || (g % 5), 'noop', 'done', 1, 1,
       now() - interval '1 day' + g * interval '10 milliseconds', now() - interval '1 day' + g * interval '10 milliseconds',
       now() - interval '1 day' + g * interval '10 milliseconds', now() - interval '1 day' + g * interval '11 milliseconds'
FROM generate_series(1, $1) AS g
