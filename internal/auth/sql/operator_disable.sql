-- OperatorDisable: disable an operator account and end its sessions. Row
-- lock on the operators row (unique index on name).
WITH o AS (
    UPDATE operators SET disabled = true WHERE name = $1 RETURNING id
), ended AS (
    DELETE FROM operator_sessions WHERE operator_id IN (SELECT id FROM o)
)
SELECT id FROM o
