-- scale_dead: $1 dead letters for scale's table, the oldest rows: five
-- queues, seven error classes, finished over a day two days ago. Bench
-- databases only.
INSERT INTO jobs (queue, kind, status, attempts, max_attempts, lease_generation, error_class, last_error,
                  created_at, available_at, started_at, finished_at)
SELECT 'scale-' || (g % 5), 'noop', 'dead', 8, 8, 8, 'E' || (g % 7), 'boom ' || (g % 7),
       now() - interval '3 days', now() - interval '3 days', now() - interval '3 days',
       now() - interval '2 days' + g * interval '1 second'
FROM generate_series(1, $1) AS g
