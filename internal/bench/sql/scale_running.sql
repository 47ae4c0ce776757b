-- scale_running: $1 running jobs for scale's table, leased for an hour to a
-- worker that does not exist. Bench databases only.
INSERT INTO jobs (queue, kind, status, attempts, lease_generation, lease_owner, lease_until, started_at)
SELECT 'scale-' || (g % 5), 'noop', 'running', 1, 1, 'scale-worker', now() + interval '1 hour', now()
FROM generate_series(1, $1) AS g
