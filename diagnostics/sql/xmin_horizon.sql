-- XminHorizon: everything that holds back the xmin horizon (so VACUUM cannot
-- remove dead rows, queue tables bloat): backends with an old snapshot or
-- transaction, prepared transactions, replication slots (xmin and
-- catalog_xmin) and standbys with hot_standby_feedback, oldest first.
-- Reads pg_stat_activity, pg_prepared_xacts, pg_replication_slots and
-- pg_stat_replication: no locks. Hides this process's diagnostics backends
-- by pid.
-- holds_tables says whether the holder keeps VACUUM from removing dead rows
-- of this database's tables: a backend or prepared transaction only in its
-- own database (PostgreSQL 14+ computes the horizon of ordinary tables per
-- database), a slot's xmin and a standby's feedback everywhere, a slot's
-- catalog_xmin only in the system catalogs.
-- NULL-safe: database (a prepared transaction's is NULL while its database is
-- unresolvable in this snapshot: created after it began, or being dropped;
-- a walsender's, a background worker's) and owner are coalesced to '' (the
-- detail says "(unknown database)"); age_seconds is NULL for a row whose
-- xact_start this role may not see, and is a *float64.
SELECT kind, holder, database, xmin, xid_age, age_seconds, detail, holds_tables
FROM (
    SELECT 'backend'::text                                        AS kind,
           a.pid::text                                            AS holder,
           coalesce(a.datname::text, '')                          AS database,
           coalesce(a.backend_xid, a.backend_xmin)::text          AS xmin,
           greatest(coalesce(age(a.backend_xid), 0), coalesce(age(a.backend_xmin), 0)) AS xid_age,
           extract(epoch FROM clock_timestamp() - a.xact_start)::float8 AS age_seconds,
           concat_ws(' ', coalesce(a.state, ''), coalesce(a.application_name, ''),
                     left(coalesce(a.query, ''), 200))             AS detail,
           a.datname IS NOT DISTINCT FROM current_database()      AS holds_tables
    FROM pg_stat_activity AS a
    WHERE (a.backend_xmin IS NOT NULL OR a.backend_xid IS NOT NULL)
      AND a.pid <> pg_backend_pid()
      AND a.pid <> ALL (coalesce(string_to_array(nullif(current_setting('console.own_pids', true), ''), ',')::int4[], '{}'))
      AND a.backend_type <> 'walsender'
      -- A lazy VACUUM's snapshot does not hold the horizon back for others
      -- (it is ignored when the horizon is computed); it is no holder.
      AND a.pid NOT IN (SELECT v.pid FROM pg_stat_progress_vacuum AS v)
    UNION ALL
    SELECT 'prepared_xact', p.gid, coalesce(p.database::text, ''), p.transaction::text, age(p.transaction),
           extract(epoch FROM clock_timestamp() - p.prepared)::float8,
           concat_ws(' ', 'database', coalesce(p.database::text, '(unknown database)'),
                     'owner', coalesce(p.owner::text, '(unknown owner)')),
           p.database IS NOT DISTINCT FROM current_database()
    FROM pg_prepared_xacts AS p
    UNION ALL
    SELECT 'slot', s.slot_name::text, coalesce(s.database::text, ''), s.xmin::text, age(s.xmin), NULL::float8,
           concat_ws(' ', s.slot_type, CASE WHEN s.active THEN 'active' ELSE 'inactive' END,
                     (SELECT 'used by ' || coalesce(r.application_name, '?') || ' at ' || coalesce(host(r.client_addr), 'a local socket')
                      FROM pg_stat_replication AS r WHERE r.pid = s.active_pid)), true
    FROM pg_replication_slots AS s
    WHERE s.xmin IS NOT NULL
    UNION ALL
    SELECT 'slot_catalog', s.slot_name::text, coalesce(s.database::text, ''), s.catalog_xmin::text, age(s.catalog_xmin), NULL::float8,
           concat_ws(' ', s.slot_type, CASE WHEN s.active THEN 'active' ELSE 'inactive' END), false
    FROM pg_replication_slots AS s
    WHERE s.catalog_xmin IS NOT NULL
    UNION ALL
    SELECT 'standby', coalesce(r.application_name, r.pid::text), '', r.backend_xmin::text,
           age(r.backend_xmin), NULL::float8, coalesce(host(r.client_addr), ''), true
    FROM pg_stat_replication AS r
    WHERE r.backend_xmin IS NOT NULL
) AS h
ORDER BY xid_age DESC, age_seconds DESC NULLS LAST
LIMIT 100
