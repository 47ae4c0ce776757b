package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/audit"
)

// TestIncidentActions: opening, capturing into and closing an incident are
// audited actions whose audit events carry the incident's id, and a capture
// reads the database the actions act on (its evidence shows the queue this
// test filled there).
func TestIncidentActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, diag := poolWithDiagnostics(t)
	r := newRunner(t, pool, actions.RunnerConfig{Diagnostics: diag})

	_, err := r.Run(ctx, viewer, "incident.open", actions.Request{Params: map[string]any{"title": "x"}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrForbidden)
	_, err = r.Run(ctx, operator, "incident.open", actions.Request{Params: map[string]any{"title": "x"}})
	require.ErrorIs(t, err, actions.ErrReasonRequired)
	_, err = r.Run(ctx, operator, "incident.open", actions.Request{Params: map[string]any{"title": "  "}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrInvalid)
	dry, err := r.Run(ctx, operator, "incident.open", actions.Request{Params: map[string]any{"title": "dry"}, DryRun: true})
	require.NoError(t, err)
	require.Nil(t, dry.Result)
	require.Zero(t, queryInt(t, pool, "SELECT count(*) FROM incidents"), "a dry run opens nothing")

	out, err := r.Run(ctx, operator, "incident.open", actions.Request{
		Params: map[string]any{"title": "orders slow", "impact": "p99 8s"}, Reason: reason})
	require.NoError(t, err)
	inc := out.Result.(actions.IncidentView)
	require.Equal(t, "open", inc.Status)
	ev := lastAudit(t, pool)
	require.Equal(t, "incident.open", ev.Action)
	require.NotNil(t, ev.IncidentID)
	require.Equal(t, inc.ID, *ev.IncidentID)

	_, err = r.Run(ctx, operator, "incident.capture", actions.Request{
		Params: map[string]any{"incident_id": inc.ID, "panel": "no_such_panel"}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrNotFound)
	for range 3 {
		insertJob(t, pool, "incident-orders", "ready", "")
	}
	out, err = r.Run(ctx, operator, "incident.capture", actions.Request{
		Params: map[string]any{"incident_id": inc.ID, "panel": "queue_health"}, Reason: reason})
	require.NoError(t, err)
	evidence, err := audit.EvidenceList(ctx, pool, inc.ID)
	require.NoError(t, err)
	require.Len(t, evidence, 1)
	require.Equal(t, "queues", evidence[0].Step)
	require.Contains(t, evidence[0].SQLText, "jobs", "the capture keeps the SQL that ran")
	var captured struct {
		Rows []struct {
			Queue string `json:"queue"`
			Ready int64  `json:"ready"`
		} `json:"rows"`
	}
	require.NoError(t, json.Unmarshal(evidence[0].Data, &captured))
	ready := map[string]int64{}
	for _, row := range captured.Rows {
		ready[row.Queue] = row.Ready
	}
	require.Equal(t, map[string]int64{"incident-orders": 3}, ready,
		"the evidence is read from the database the actions act on")
	require.Equal(t, inc.ID, *lastAudit(t, pool).IncidentID)

	_, err = r.Run(ctx, operator, "incident.close", actions.Request{Params: map[string]any{"id": inc.ID, "summary": "fixed"}, Reason: reason})
	require.NoError(t, err)
	got, err := audit.IncidentGet(ctx, pool, inc.ID)
	require.NoError(t, err)
	require.Equal(t, "closed", got.Status)
	_, err = r.Run(ctx, operator, "incident.close", actions.Request{Params: map[string]any{"id": inc.ID}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrInvalid, "closing twice is refused")
	_, err = r.Run(ctx, operator, "incident.capture", actions.Request{
		Params: map[string]any{"incident_id": inc.ID, "panel": "queue_health"}, Reason: reason})
	require.ErrorIs(t, err, actions.ErrInvalid, "a closed incident takes no evidence")
}

func openIncident(t *testing.T, pool *pgxpool.Pool) int64 {
	t.Helper()
	inc, err := audit.IncidentOpen(context.Background(), pool, audit.IncidentOpenParams{Title: "orders slow", OpenedBy: "olga"})
	require.NoError(t, err)
	return inc.ID
}

func incidentCases() []actionCase {
	return []actionCase{
		{
			name: "incident.open", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				return map[string]any{"title": "orders slow", "impact": "p99 8s", "window_start": "2026-01-02T15:04:05Z"}
			},
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM incidents"))
			},
		},
		{
			name: "incident.close", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				return map[string]any{"id": openIncident(t, pool), "summary": "fixed"}
			},
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return queryText(t, pool, "SELECT string_agg(status, ',') FROM incidents")
			},
		},
		{
			name: "incident.capture", actor: operator, weaker: viewer, diagnostics: true,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				return map[string]any{"incident_id": openIncident(t, pool), "panel": "queue_health"}
			},
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM incident_evidence"))
			},
		},
		{
			name: "incident.note", actor: operator, weaker: viewer,
			setup: func(t *testing.T, pool *pgxpool.Pool) map[string]any {
				return map[string]any{"incident_id": openIncident(t, pool), "text": "paused mail at 03:12"}
			},
			// The note is its audit event, linked to the incident.
			state: func(t *testing.T, pool *pgxpool.Pool) string {
				return fmt.Sprint(queryInt(t, pool, "SELECT count(*) FROM audit_events WHERE action = 'incident.note' AND outcome = 'succeeded' AND incident_id IS NOT NULL"))
			},
		},
	}
}
