-- TokenGet: the token behind a bearer secret when TokenLookup did not touch it.
SELECT id, name, role FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL
