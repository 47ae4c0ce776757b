-- SessionLookup: the operator behind a session cookie, if the session is
-- live and the account enabled. Primary key on operator_sessions(id_hash).
SELECT o.id, o.name, o.role
FROM operator_sessions s
JOIN operators o ON o.id = s.operator_id
WHERE s.id_hash = $1
  AND s.expires_at > clock_timestamp()
  AND NOT o.disabled
