-- RecordTx: append one audit event.
-- The BEFORE INSERT trigger audit_events_chain locks the single
-- audit_chain_head row (FOR UPDATE, held to the end of the transaction), sets
-- seq, prev_hash and hash, and moves the head. No index beyond the primary
-- key and seq's unique index is needed.
INSERT INTO audit_events (actor, role, action, target, params, reason, preview, result, outcome, error, incident_id)
VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb, $8::jsonb, $9, $10, $11)
RETURNING id
