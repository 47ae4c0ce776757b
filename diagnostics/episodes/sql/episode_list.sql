-- EpisodeList: the episodes that started between $1 and $2 and lasted at
-- least $3 seconds (an open one counts to its last sighting), filtered by
-- table $4, application $5 (the root's or any waiter's), job kind $6 and
-- queue $7 (empty: any), most waited first, at most $8. Range scan of
-- lock_episodes_start_idx; takes no locks beyond ACCESS SHARE.
SELECT id, start_at, last_seen_at, end_at, end_seen, recorded_by, root_pid, root_application, root_query,
       lock_type, lock_mode, lock_target, tables, applications, job_kinds, queues,
       peak_waiting, jobs_delayed, claims_delayed, waited_seconds
FROM lock_episodes
WHERE start_at >= $1 AND start_at <= $2
  AND date_part('epoch', coalesce(end_at, last_seen_at) - start_at) >= $3
  AND ($4 = '' OR $4 = ANY (tables))
  AND ($5 = '' OR $5 = root_application OR $5 = ANY (applications))
  AND ($6 = '' OR $6 = ANY (job_kinds))
  AND ($7 = '' OR $7 = ANY (queues))
ORDER BY waited_seconds DESC, start_at DESC
LIMIT $8
