-- counters: the server's WAL position in bytes and this database's commit
-- count, read before and after a measured phase. No locks.
SELECT pg_current_wal_lsn() - '0/0'::pg_lsn,
       (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())
