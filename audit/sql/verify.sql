-- Verify: every audit event in chain order, with its JSON documents in the
-- text form jsonb renders them in; the console recomputes each hash itself
-- and trusts no arithmetic of the database's. Reads only (a full scan in seq
-- order through the unique index on seq).
SELECT e.seq, e.id, e.at, e.actor, e.role, e.action, e.target, e.params::text, e.reason,
       e.preview::text, e.result::text, e.outcome, e.error, e.incident_id, e.prev_hash, e.hash, e.hash_alg
FROM audit_events e
ORDER BY e.seq
