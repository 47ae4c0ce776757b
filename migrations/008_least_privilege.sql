-- 010: least privilege for the runtime roles, and API token expiry.
--
-- audit_chain_lock is SECURITY DEFINER: whoever may call it locks the audit
-- chain's head (until their transaction ends) and draws an audit event id.
-- Functions are executable by PUBLIC by default; only the roles that record
-- audit events get it back (`console roles sql` grants it to
-- console_operator).
REVOKE EXECUTE ON FUNCTION audit_chain_lock() FROM PUBLIC;

-- An API token may carry an expiry; a token past it is refused like a
-- revoked one. NULL never expires (tokens created before this migration).
ALTER TABLE api_tokens ADD COLUMN expires_at timestamptz;
