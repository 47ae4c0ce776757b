-- EpisodeParticipants: the sessions of the episodes $1 (ids), root first,
-- then blockers, then waiters by when they started waiting. Primary key
-- of lock_episode_participants; takes no locks beyond ACCESS SHARE.
SELECT episode_id, seq, pid, backend_start, role, blocked_by, application, fingerprint, query,
       lock_type, lock_mode, lock_target, held, job_id, job_kind, queue, wait_start, first_seen_at, last_seen_at
FROM lock_episode_participants
WHERE episode_id = ANY ($1)
ORDER BY episode_id, CASE role WHEN 'root' THEN 0 WHEN 'blocker' THEN 1 ELSE 2 END, wait_start NULLS FIRST, seq
