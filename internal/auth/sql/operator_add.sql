-- OperatorAdd: create an operator account, or replace the password and role
-- of an existing one with the same name. Row lock on operators(name).
INSERT INTO operators (name, password_hash, role)
VALUES ($1, $2, $3)
ON CONFLICT (name) DO UPDATE
SET password_hash = EXCLUDED.password_hash, role = EXCLUDED.role, disabled = false
RETURNING id
