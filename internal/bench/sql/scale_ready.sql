-- scale_ready: $1 ready jobs for scale's table, due a minute ago: the
-- newest rows. Bench databases only.
INSERT INTO jobs (queue, kind, available_at)
SELECT 'scale-' || (g % 5), 'noop', now() - interval '1 minute'
FROM generate_series(1, $1) AS g
