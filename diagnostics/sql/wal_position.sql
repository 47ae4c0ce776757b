-- WALPosition: the current WAL position as a byte offset (the insert LSN on a
-- primary, the replay LSN on a standby), sampled twice to get the WAL rate
-- (runbook step 5). No locks; constant cost.
SELECT pg_is_in_recovery() AS in_recovery,
       (CASE WHEN pg_is_in_recovery()
             THEN coalesce(pg_last_wal_replay_lsn(), '0/0'::pg_lsn)
             ELSE pg_current_wal_lsn() END)::text                 AS lsn,
       pg_wal_lsn_diff(CASE WHEN pg_is_in_recovery()
                            THEN coalesce(pg_last_wal_replay_lsn(), '0/0'::pg_lsn)
                            ELSE pg_current_wal_lsn() END, '0/0')::int8 AS lsn_bytes,
       clock_timestamp()                                          AS sampled_at
