-- OperatorAdd: create an operator account, or replace the password and role
-- of an existing one (enabling it again) and end every session it had, so a
-- changed password signs out whoever held the old one. Row lock on
-- operators(name); operator_sessions rows of the account, found through its
-- foreign key (sequential scan of a small table).
WITH o AS (
    INSERT INTO operators (name, password_hash, role)
    VALUES ($1, $2, $3)
    ON CONFLICT (name) DO UPDATE
    SET password_hash = EXCLUDED.password_hash, role = EXCLUDED.role, disabled = false
    RETURNING id
), ended AS (
    DELETE FROM operator_sessions WHERE operator_id IN (SELECT id FROM o)
)
SELECT id FROM o
