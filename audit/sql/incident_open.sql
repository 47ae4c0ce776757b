-- IncidentOpen: declare an incident. Inserts one row; window_start defaults
-- to now when $4 is NULL.
INSERT INTO incidents (title, impact, slo, window_start, opened_by)
VALUES ($1, $2, $3, coalesce($4::timestamptz, clock_timestamp()), $5)
RETURNING id, title, status, impact, slo, window_start, window_end, opened_by, opened_at,
          closed_by, closed_at, summary
