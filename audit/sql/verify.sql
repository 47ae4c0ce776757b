-- Verify: every audit event in chain order with the hash recomputed from its
-- stored contents. Reads only (a full scan in seq order through the unique
-- index on seq); the caller compares hash with expected and prev_hash with
-- the previous row's hash.
SELECT e.seq, e.id, e.prev_hash, e.hash,
       sha256(e.prev_hash || convert_to(audit_event_canonical(e), 'UTF8')) AS expected
FROM audit_events e
ORDER BY e.seq
