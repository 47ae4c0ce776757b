-- OperatorByName: the account a login names. Unique index on operators(name).
SELECT id, name, password_hash, role, disabled
FROM operators
WHERE name = $1
