-- EpisodeList: the episodes that started between $1 and $2 and lasted at
-- least $3 seconds (an open one counts to its last sighting), filtered by
-- table $4, application $5 (the root's or any waiter's), job kind $6 and
-- queue $7 (empty: any), most waited first, at most $8, after the episode
-- ($9 waited seconds, $10 start, $11 id) that ended the page before
-- ($9 = 'Infinity' for the first page: no episode waited that long).
-- A long window is read through lock_episodes_impact_idx backward, in this
-- order, up to the limit; a short one through lock_episodes_start_idx and
-- sorted (the planner picks by the window's size). Takes no locks beyond
-- ACCESS SHARE.
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
  AND (waited_seconds, start_at, id) < ($9::float8, $10::timestamptz, $11::int8)
ORDER BY waited_seconds DESC, start_at DESC, id DESC
LIMIT $8
