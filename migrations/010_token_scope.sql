-- A token's scope narrows what its role allows. NULL: everything the role
-- may do. 'alerts': only Alertmanager's webhook (POST /api/v1/alerts), so
-- the secret kept in Alertmanager's configuration opens incidents and
-- nothing else.
ALTER TABLE api_tokens ADD COLUMN scope text CHECK (scope IN ('alerts'));

