-- StandbyStatus: run on a standby, what its WAL receiver and startup process
-- are doing (runbook step 9): received versus replayed position, replay
-- delay from the last replayed commit, and whether replay is paused. On a
-- primary in_recovery is false and the rest is empty. application_name is
-- the name the standby gives the primary (primary_conninfo's, else
-- cluster_name, else walreceiver), the one pg_stat_replication and the
-- primary's xmin horizon show. oldest_* is the client backend whose snapshot
-- is oldest here: with hot_standby_feedback on, it holds the primary's
-- xmin horizon. No locks; one row.
-- NULL-safe: every LSN and pg_stat_wal_receiver column (NULL on a primary,
-- with no receiver, or for a role without pg_read_all_stats) is coalesced
-- to '' or 0, or is a pointer (the times); oldest_pid and
-- oldest_xact_seconds are pointers (NULL when no snapshot is open, or
-- xact_start is hidden from this role), oldest_query and
-- oldest_application are coalesced to ''.
SELECT pg_is_in_recovery()                                      AS in_recovery,
       coalesce(pg_last_wal_receive_lsn()::text, '')            AS receive_lsn,
       coalesce(pg_last_wal_replay_lsn()::text, '')             AS replay_lsn,
       coalesce(pg_wal_lsn_diff(pg_last_wal_receive_lsn(),
                                pg_last_wal_replay_lsn()), 0)::int8 AS replay_lag_bytes,
       pg_last_xact_replay_timestamp()                          AS last_replay_at,
       CASE WHEN pg_is_in_recovery()
                 AND pg_last_wal_receive_lsn() IS DISTINCT FROM pg_last_wal_replay_lsn()
            THEN coalesce(extract(epoch FROM clock_timestamp()
                                  - pg_last_xact_replay_timestamp()), 0)
            ELSE 0 END::float8                                   AS replay_delay_seconds,
       CASE WHEN pg_is_in_recovery() THEN pg_get_wal_replay_pause_state()
            ELSE '' END                                         AS replay_pause_state,
       coalesce(w.status, '')                                   AS receiver_status,
       coalesce(w.sender_host, '')                              AS sender_host,
       coalesce(w.sender_port, 0)                               AS sender_port,
       coalesce(w.slot_name, '')                                AS slot_name,
       coalesce(w.flushed_lsn::text, '')                        AS flushed_lsn,
       coalesce(w.latest_end_lsn::text, '')                     AS latest_end_lsn,
       w.last_msg_receipt_time,
       w.latest_end_time,
       coalesce(substring(w.conninfo FROM 'application_name=([^ ]+)'),
                nullif(current_setting('cluster_name'), ''), 'walreceiver') AS application_name,
       current_setting('hot_standby_feedback') = 'on'           AS hot_standby_feedback,
       o.pid                                                    AS oldest_pid,
       coalesce(o.query, '')                                    AS oldest_query,
       coalesce(o.application_name, '')                         AS oldest_application,
       o.xact_age_seconds                                       AS oldest_xact_seconds
FROM (SELECT 1) AS one
LEFT JOIN pg_stat_wal_receiver AS w ON true
LEFT JOIN LATERAL (
    SELECT a.pid, left(a.query, 200) AS query, a.application_name,
           extract(epoch FROM clock_timestamp() - a.xact_start)::float8 AS xact_age_seconds
    FROM pg_stat_activity AS a
    WHERE a.backend_type = 'client backend' AND a.backend_xmin IS NOT NULL
      AND a.pid <> pg_backend_pid()
      AND a.pid <> ALL (coalesce(string_to_array(nullif(current_setting('console.own_pids', true), ''), ',')::int4[], '{}'))
    ORDER BY age(a.backend_xmin) DESC, a.xact_start
    LIMIT 1
) AS o ON true
