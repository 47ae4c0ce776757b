-- TokenGet: the token behind a bearer secret when TokenLookup did not touch
-- it, if not revoked and not expired.
SELECT id, name, role, coalesce(scope, '') FROM api_tokens
WHERE token_hash = $1 AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > clock_timestamp())
