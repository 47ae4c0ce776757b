-- queue_dead_tuples: dead tuples of every table of this database (a scratch
-- database holds only the engine's tables) and of the jobs table alone, as
-- the statistics report them (they lag by up to a second). No locks.
SELECT coalesce(sum(n_dead_tup), 0)::bigint,
       coalesce(sum(n_dead_tup) FILTER (WHERE relid = 'jobs'::regclass), 0)::bigint
FROM pg_stat_user_tables
