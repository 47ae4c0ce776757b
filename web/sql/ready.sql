-- ready: /readyz's round trip. No locks.
SELECT 1
