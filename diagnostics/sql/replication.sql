-- Replication: every WAL sender as seen from this server (runbook step 9,
-- RB-J): how far each standby has received, flushed and replayed, in bytes
-- behind the current position and in time (write/flush/replay_lag are
-- recent estimates; NULL means no recent measurement, not zero lag).
-- Reads pg_stat_replication: no locks.
-- NULL-safe: application_name, client_addr (NULL for a Unix-socket standby
-- or another role's walsender), state and sync_state are coalesced to '';
-- the LSNs, lags, xmin_age and reply_time are pointers; bytes behind an
-- unknown LSN read as 0.
WITH cur AS (
    SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_receive_lsn()
                ELSE pg_current_wal_lsn() END AS lsn
)
SELECT r.pid,
       coalesce(r.application_name, '')                       AS application_name,
       coalesce(host(r.client_addr), '')                      AS client_addr,
       coalesce(r.state, '')                                  AS state,
       coalesce(r.sync_state, '')                             AS sync_state,
       r.sent_lsn::text                                       AS sent_lsn,
       r.write_lsn::text                                      AS write_lsn,
       r.flush_lsn::text                                      AS flush_lsn,
       r.replay_lsn::text                                     AS replay_lsn,
       coalesce(pg_wal_lsn_diff(cur.lsn, r.sent_lsn), 0)::int8   AS sent_lag_bytes,
       coalesce(pg_wal_lsn_diff(cur.lsn, r.write_lsn), 0)::int8  AS write_lag_bytes,
       coalesce(pg_wal_lsn_diff(cur.lsn, r.flush_lsn), 0)::int8  AS flush_lag_bytes,
       coalesce(pg_wal_lsn_diff(cur.lsn, r.replay_lsn), 0)::int8 AS replay_lag_bytes,
       extract(epoch FROM r.write_lag)::float8                AS write_lag_seconds,
       extract(epoch FROM r.flush_lag)::float8                AS flush_lag_seconds,
       extract(epoch FROM r.replay_lag)::float8               AS replay_lag_seconds,
       age(r.backend_xmin)                                    AS xmin_age,
       r.reply_time
FROM pg_stat_replication AS r
CROSS JOIN cur
ORDER BY replay_lag_bytes DESC, r.application_name
