-- PreparedXacts: two-phase transactions prepared and not yet committed or
-- rolled back, oldest first (RB-L). They keep their locks and hold the xmin
-- horizon across restarts until someone resolves them. Reads
-- pg_prepared_xacts: no locks.
-- NULL-safe: database and owner are NULL while unresolvable in the
-- statement's snapshot (created after it began, or being dropped) and are
-- coalesced to '' (shown as a dash).
SELECT gid,
       p.transaction::text                                                AS xid,
       age(p.transaction)                                                 AS xid_age,
       p.prepared,
       extract(epoch FROM clock_timestamp() - p.prepared)::float8         AS age_seconds,
       coalesce(p.owner::text, '')                                        AS owner,
       coalesce(p.database::text, '')                                     AS database
FROM pg_prepared_xacts AS p
ORDER BY p.prepared
