-- dead_tuples: the jobs table's dead tuples as the statistics report them
-- (they lag by up to a second). No locks.
SELECT coalesce(n_dead_tup, 0) FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass
