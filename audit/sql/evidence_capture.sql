-- EvidenceCaptureTx: attach one runbook step's output to an open incident.
-- Inserts one row only when the incident exists and is open (the
-- INSERT ... SELECT returns nothing otherwise). Takes a FOR KEY SHARE lock on
-- the incident row through the foreign key.
INSERT INTO incident_evidence (incident_id, step, title, sql_text, data, captured_by)
SELECT i.id, $2, $3, $4, $5::jsonb, $6
FROM incidents i
WHERE i.id = $1 AND i.status = 'open'
RETURNING id, incident_id, step, title, sql_text, data, captured_by, captured_at
