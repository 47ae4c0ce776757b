-- AlertNotificationIncidentSet: name the incident a notice was recorded
-- on. Primary key update of the row this transaction inserted.
UPDATE alert_notifications SET incident_id = $4
WHERE fingerprint = $1 AND starts_at = $2 AND status = $3
