-- AlertNotificationIncident: the incident the firing notice of an alert
-- (fingerprint, start) joined, to note its resolution there. Primary key
-- lookup; no locks beyond ACCESS SHARE.
SELECT incident_id FROM alert_notifications
WHERE fingerprint = $1 AND starts_at = $2 AND status = 'firing'
