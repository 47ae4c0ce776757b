-- EvidenceList: an incident's evidence in capture order. Reads only, through
-- incident_evidence_incident_idx.
SELECT id, incident_id, step, title, sql_text, data, captured_by, captured_at
FROM incident_evidence
WHERE incident_id = $1
ORDER BY captured_at, id
