-- IncidentClose: close an open incident, ending its window (now when $4 is
-- NULL). Updates at most one row by primary key; no row when the incident is
-- unknown or already closed.
UPDATE incidents
SET status = 'closed', closed_by = $2, closed_at = clock_timestamp(),
    summary = $3, window_end = coalesce($4::timestamptz, clock_timestamp())
WHERE id = $1 AND status = 'open'
RETURNING id, title, status, impact, slo, window_start, window_end, opened_by, opened_at,
          closed_by, closed_at, summary
