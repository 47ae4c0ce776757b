package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/auth"
)

// postAlerts sends an Alertmanager notification with token.
func postAlerts(t *testing.T, e *env, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.http.URL+"/api/v1/alerts", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := e.client(t)
	resp, out := c.do(req)
	return resp.StatusCode, out
}

// notification is an Alertmanager webhook body with one alert.
func notification(status, name, fingerprint string, startsAt time.Time, runbook string) string {
	b, _ := json.Marshal(map[string]any{
		"version": "4", "status": status, "receiver": "console", "groupKey": "{}:{alertname=\"" + name + "\"}",
		"alerts": []map[string]any{{
			"status": status, "labels": map[string]string{"alertname": name, "severity": "critical", "instance": "db-1"},
			"annotations": map[string]string{"summary": "a lock chain", "runbook_url": runbook},
			"startsAt":    startsAt.Format(time.RFC3339Nano), "endsAt": "0001-01-01T00:00:00Z", "fingerprint": fingerprint,
		}},
	})
	return string(b)
}

func TestAlertsWebhookOpensJoinsAndNotesOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := setup(t)
	lc := newLockChain(t, e.url)
	op, err := auth.TokenCreateWith(ctx, e.srv.cfg.Pool, "alertmanager", auth.RoleOperator, auth.TokenOptions{Scope: auth.ScopeAlerts})
	require.NoError(t, err)
	viewer, err := auth.TokenCreate(ctx, e.srv.cfg.Pool, "grafana", auth.RoleViewer)
	require.NoError(t, err)
	start := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)

	// The alerts token is an operator's for the webhook and nothing else:
	// it reads nothing and acts on nothing.
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/findings"},
		{http.MethodGet, "/api/v1/jobs"},
		{http.MethodPost, "/api/v1/actions/queue.pause"},
	} {
		req, err := http.NewRequest(r.method, e.http.URL+r.path, strings.NewReader(`{"dry_run": true}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+op)
		resp, body := e.client(t).do(req)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %s: %s", r.method, r.path, body)
		require.Contains(t, body, "may only post Alertmanager notifications")
	}

	// Who may call it, and bad bodies.
	status, body := postAlerts(t, e, viewer, notification("firing", "ConsoleBlockedBackends", "aa01", start, "http://c/runbook/blocking"))
	require.Equal(t, http.StatusForbidden, status, body)
	require.Contains(t, body, "needs an operator token")
	status, _ = postAlerts(t, e, "", notification("firing", "ConsoleBlockedBackends", "aa01", start, ""))
	require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, status, "no token")
	status, body = postAlerts(t, e, op, `{"alerts": "nope"}`)
	require.Equal(t, http.StatusBadRequest, status, body)
	require.Contains(t, body, "not an Alertmanager webhook")

	// Firing: an incident opens with the blocking tree captured.
	status, body = postAlerts(t, e, op, notification("firing", "ConsoleBlockedBackends", "aa01", start, "http://c/runbook/blocking"))
	require.Equal(t, http.StatusOK, status, body)
	var ans struct {
		Alerts []alertOutcome `json:"alerts"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &ans))
	require.Len(t, ans.Alerts, 1)
	require.Equal(t, "opened", ans.Alerts[0].Result)
	require.Equal(t, []string{"blocking_tree", "blocked_jobs", "lock_waits"}, ans.Alerts[0].Captured)
	id := ans.Alerts[0].IncidentID
	inc, err := audit.IncidentGet(ctx, e.srv.cfg.Pool, id)
	require.NoError(t, err)
	require.Equal(t, "alert ConsoleBlockedBackends: a lock chain", inc.Title)
	require.True(t, inc.WindowStart.Equal(start), "the incident starts when the alert did")
	ev, err := audit.EvidenceList(ctx, e.srv.cfg.Pool, id)
	require.NoError(t, err)
	require.Len(t, ev, 3, "the blocking step's three panels")
	require.Contains(t, ev[0].Title+ev[0].Step+ev[0].SQLText, "blocking", "first capture: %+v", ev[0])
	require.Contains(t, string(ev[0].Data), fmt.Sprint(lc.rootPID), "the blocking tree as it was, with the root blocker")

	// The same notice again, twice: nothing more happens.
	for range 2 {
		status, body = postAlerts(t, e, op, notification("firing", "ConsoleBlockedBackends", "aa01", start, "http://c/runbook/blocking"))
		require.Equal(t, http.StatusOK, status, body)
		require.Contains(t, body, `"result":"duplicate"`)
	}
	// Another alert joins the open incident.
	status, body = postAlerts(t, e, op, notification("firing", "ConsoleLongTransaction", "bb02", start, "http://c/runbook/activity"))
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, fmt.Sprintf(`"result":"joined","incident_id":%d`, id))
	// Resolved: noted on the incident it opened, once.
	for i := range 2 {
		status, body = postAlerts(t, e, op, notification("resolved", "ConsoleBlockedBackends", "aa01", start, "http://c/runbook/blocking"))
		require.Equal(t, http.StatusOK, status, body)
		if i == 0 {
			require.Contains(t, body, fmt.Sprintf(`"result":"noted","incident_id":%d`, id))
		} else {
			require.Contains(t, body, `"result":"duplicate"`)
		}
	}
	md, err := audit.IncidentMarkdown(ctx, e.srv.cfg.Pool, id)
	require.NoError(t, err)
	require.Contains(t, md, `alert ConsoleBlockedBackends firing: {alertname="ConsoleBlockedBackends", instance="db-1", severity="critical"}`)
	require.Contains(t, md, `alert ConsoleBlockedBackends resolved:`)
	var n int
	require.NoError(t, e.srv.cfg.Pool.QueryRow(ctx, "SELECT count(*) FROM incidents").Scan(&n))
	require.Equal(t, 1, n)
	ev, err = audit.EvidenceList(ctx, e.srv.cfg.Pool, id)
	require.NoError(t, err)
	require.Len(t, ev, 3+2+3, "opened (blocking: 3 panels), joined (activity: 2) and resolved (blocking: 3) each captured their step's panels once")
}
