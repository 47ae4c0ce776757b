-- TokenList: every API token, newest first (never its hash). Sequential
-- scan of a small table.
SELECT id, name, role, coalesce(scope, ''), created_at, last_used_at, expires_at, revoked_at
FROM api_tokens
ORDER BY id DESC
