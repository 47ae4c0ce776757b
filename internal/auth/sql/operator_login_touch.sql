-- OperatorLoginTouch: record a successful sign-in.
UPDATE operators SET last_login_at = clock_timestamp() WHERE id = $1
