-- PreparedXacts: two-phase transactions prepared and not yet committed or
-- rolled back, oldest first (RB-L). They keep their locks and hold the xmin
-- horizon across restarts until someone resolves them. Reads
-- pg_prepared_xacts: no locks.
SELECT gid,
       p.transaction::text                                                AS xid,
       age(p.transaction)                                                 AS xid_age,
       p.prepared,
       extract(epoch FROM clock_timestamp() - p.prepared)::float8         AS age_seconds,
       coalesce(p.owner::text, '')                                        AS owner,
       coalesce(p.database::text, '')                                     AS database
FROM pg_prepared_xacts AS p
ORDER BY p.prepared
