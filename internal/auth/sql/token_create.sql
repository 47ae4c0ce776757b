-- TokenCreate: store the hash of a new API token.
INSERT INTO api_tokens (name, token_hash, role) VALUES ($1, $2, $3) RETURNING id
