-- HeadGet: the chain head (last seq and hash the chain trigger moved it to).
-- Reads one row without locking it.
SELECT last_seq, last_hash FROM audit_chain_head WHERE singleton
