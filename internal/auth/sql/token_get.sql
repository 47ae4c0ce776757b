-- TokenGet: the token behind a bearer secret, if not revoked and not
-- expired. A read only, so a token works on a standby; last use is
-- recorded apart, in batches (token_used.sql). Unique index on
-- api_tokens(token_hash).
SELECT id, name, role, coalesce(scope, '') FROM api_tokens
WHERE token_hash = $1 AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > clock_timestamp())
