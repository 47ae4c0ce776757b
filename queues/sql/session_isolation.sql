-- SessionIsolation: the isolation level a new transaction of this session
-- gets when it names none (the server's, database's or role's
-- default_transaction_isolation, unless the connection set its own). Reads
-- a setting; no locks.
SELECT current_setting('default_transaction_isolation')
