-- scale_running: running jobs $1..$2 of scale's table over 100 queues,
-- leased for an hour to a worker that does not exist. Bench databases only.
INSERT INTO jobs (queue, kind, status, attempts, lease_generation, lease_owner, lease_until, started_at)
SELECT 'scale-' || (g % 100), 'noop', 'running', 1, 1, 'scale-worker', now() + interval '1 hour', now()
FROM generate_series($1::int8, $2::int8) AS g
