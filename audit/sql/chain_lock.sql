-- RecordTx, first statement: lock the chain head until the transaction ends
-- (audit_chain_lock, SECURITY DEFINER, takes FOR UPDATE on the one
-- audit_chain_head row), take the event's id and timestamp, and render the
-- event's JSON documents as jsonb will store them, so the hash the console
-- computes covers exactly the stored text. No index needed.
SELECT l.last_seq, l.last_hash, l.next_id, l.at,
       $1::jsonb::text AS params, $2::jsonb::text AS preview, $3::jsonb::text AS result
FROM audit_chain_lock() l
