-- EpisodeParticipantsSave: writes the sessions of episode $1 as seen so
-- far ($2, a JSON array of them, keyed as Participant's JSON): new ones are inserted, known ones get
-- their last sighting, role and what they held. Primary key (episode_id,
-- seq). Locks: ROW EXCLUSIVE on lock_episode_participants only.
INSERT INTO lock_episode_participants AS p
    (episode_id, seq, pid, backend_start, role, blocked_by, application, fingerprint, query,
     lock_type, lock_mode, lock_target, held, job_id, job_kind, queue, wait_start, first_seen_at, last_seen_at)
SELECT $1, s.seq, s.pid, s.backend_start, s.role, coalesce(s.blocked_by, '{}'), s.application, s.fingerprint, s.query,
       s.lock_type, s.lock_mode, s.lock_target, coalesce(s.held, '{}'), s.job_id, s.job_kind, s.queue, s.wait_start,
       s.first_seen, s.last_seen
FROM jsonb_to_recordset($2::jsonb)
     AS s (seq int2, pid int4, backend_start timestamptz, role text, blocked_by int4[], application text,
           fingerprint text, query text, lock_type text, lock_mode text, lock_target text, held text[],
           job_id int8, job_kind text, queue text, wait_start timestamptz, first_seen timestamptz,
           last_seen timestamptz)
ON CONFLICT (episode_id, seq) DO UPDATE
SET role = excluded.role, blocked_by = excluded.blocked_by, held = excluded.held,
    last_seen_at = excluded.last_seen_at, wait_start = coalesce(p.wait_start, excluded.wait_start)
