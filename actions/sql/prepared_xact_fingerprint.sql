-- preparedXactFingerprint: one prepared transaction by gid, with the
-- database the console is connected to (ROLLBACK PREPARED must run in the
-- transaction's own database). Reads pg_prepared_xacts; no locks, no index.
-- NULL-safe: owner and database are NULL while unresolvable in the
-- statement's snapshot (created after it began, or being dropped) and are
-- coalesced to ''; the guard refuses an unresolved database.
SELECT p.gid, p.prepared, coalesce(p.owner::text, '') AS owner,
       coalesce(p.database::text, '') AS database,
       p.transaction::text AS xid, age(p.transaction) AS xid_age,
       extract(epoch FROM clock_timestamp() - p.prepared)::float8 AS age_seconds,
       current_database()::text AS connected_database
FROM pg_prepared_xacts p
WHERE p.gid = $1
