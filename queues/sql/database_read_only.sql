-- databaseReadOnly: whether a transaction here would be read-only: on a
-- standby, or with default_transaction_read_only on. A read that never
-- fails on either, asked by a service standing down instead of its write.
-- No locks.
SELECT current_setting('transaction_read_only') = 'on'
