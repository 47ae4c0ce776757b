-- scale_dead: dead letters $1..$2 of scale's table (the oldest rows), $3
-- of them in all: 1,000 error classes over 100 queues (ten classes a
-- queue), a few classes holding most of the pile as in a real storm
-- (class k gets a share falling with k). They died over the last two days,
-- in id order, so the newest ones are within the last minutes. Bench
-- databases only.
INSERT INTO jobs (queue, kind, status, attempts, max_attempts, lease_generation, error_class, last_error,
                  created_at, available_at, started_at, finished_at)
SELECT 'scale-' || (c % 100), 'noop', 'dead', 8, 8, 8, 'E' || c, 'boom: downstream refused request class ' || c,
       now() - interval '3 days', now() - interval '3 days', now() - interval '3 days',
       now() - interval '2 days' + (g::float8 / $3) * interval '2 days'
FROM generate_series($1::int8, $2::int8) AS g,
     LATERAL (SELECT (floor(1000 * power(((g * 7919) % 100003)::float8 / 100003, 2)))::int AS c) AS k
