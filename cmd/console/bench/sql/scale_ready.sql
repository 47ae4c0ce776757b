-- scale_ready: ready jobs $1..$2 of scale's table over 100 queues, the
-- newest rows: a backlog that became due over the last ten minutes. Bench
-- databases only.
INSERT INTO jobs (queue, kind, available_at)
SELECT 'scale-' || (g % 100), 'noop', now() - interval '10 minutes' + (g % 600) * interval '1 second'
FROM generate_series($1::int8, $2::int8) AS g
