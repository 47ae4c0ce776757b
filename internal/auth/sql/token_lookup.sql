-- TokenLookup: the token behind a bearer secret, if not revoked and not
-- expired; touches last_used_at at most once a minute to keep writes rare.
-- Unique index on api_tokens(token_hash).
UPDATE api_tokens
SET last_used_at = clock_timestamp()
WHERE token_hash = $1 AND revoked_at IS NULL
  AND (expires_at IS NULL OR expires_at > clock_timestamp())
  AND (last_used_at IS NULL OR last_used_at < clock_timestamp() - interval '1 minute')
RETURNING id, name, role, coalesce(scope, '')
