-- IncidentMarkdown: the audited actions of an incident, oldest first: those
-- recorded against it and any other taken inside its window (an operator may
-- forget to pick the incident). Reads only, through audit_events_incident_idx
-- and audit_events_at_idx.
SELECT e.id, e.seq, e.at, e.actor, e.role, e.action, e.target, e.params, e.reason, e.preview,
       e.result, e.outcome, e.error, e.incident_id, e.prev_hash, e.hash, e.hash_alg
FROM audit_events e, incidents i
WHERE i.id = $1
  AND (e.incident_id = i.id
       OR (e.at >= i.window_start AND e.at <= coalesce(i.window_end, clock_timestamp())))
ORDER BY e.at, e.seq
