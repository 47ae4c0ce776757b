-- LockWaits: ungranted lock requests grouped by what they wait for (a
-- relation, a transaction id, a tuple...) and mode, most waiters first:
-- "many backends waiting on the same lock" at a glance. Reads pg_locks once:
-- no table locks. waitstart is PostgreSQL 14+.
SELECT l.locktype,
       coalesce(CASE WHEN l.relation IS NOT NULL
                     THEN coalesce(c.relname, l.relation::text) END, '') AS relation,
       l.mode,
       count(*)::int8                                                    AS waiting,
       coalesce(max(extract(epoch FROM clock_timestamp() - l.waitstart)), 0)::float8 AS max_wait_seconds,
       array_agg(l.pid ORDER BY l.waitstart NULLS LAST)                  AS pids
FROM pg_locks AS l
LEFT JOIN pg_class AS c ON c.oid = l.relation
WHERE NOT l.granted
  AND l.pid <> pg_backend_pid()
GROUP BY l.locktype, 2, l.mode
ORDER BY waiting DESC, max_wait_seconds DESC
LIMIT 100
