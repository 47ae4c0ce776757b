-- 006: number reserved for a migration on another branch; this empty
-- placeholder keeps the sequence whole on this one.
SELECT 1;
