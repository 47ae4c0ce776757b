-- AlertNotificationInsert: record one alert notice (fingerprint, start,
-- status) unless it was already acted on; no row means a duplicate. A
-- concurrent duplicate waits here for the first one's transaction. Locks:
-- ROW EXCLUSIVE on alert_notifications.
INSERT INTO alert_notifications (fingerprint, starts_at, status, alertname, labels)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING
