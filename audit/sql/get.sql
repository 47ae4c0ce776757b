-- Get: one audit event by primary key. Reads only.
SELECT id, seq, at, actor, role, action, target, params, reason, preview, result,
       outcome, error, incident_id, prev_hash, hash, hash_alg
FROM audit_events
WHERE id = $1
