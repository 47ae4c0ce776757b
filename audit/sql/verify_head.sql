-- Verify: the chain head (last seq and hash written by the chain trigger).
-- Reads one row without locking it.
SELECT last_seq, last_hash FROM audit_chain_head WHERE singleton
