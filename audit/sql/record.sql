-- RecordTx, second statement: append one audit event hashed by the console.
-- The BEFORE INSERT trigger audit_events_chain checks that seq and prev_hash
-- continue the head locked by chain_lock.sql and moves the head. No index
-- beyond the primary key and seq's unique index is needed.
INSERT INTO audit_events (id, seq, at, actor, role, action, target, params, reason, preview, result,
                          outcome, error, incident_id, prev_hash, hash, hash_alg)
OVERRIDING SYSTEM VALUE
VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, $10::jsonb, $11::jsonb, $12, $13, $14, $15, $16, $17)
