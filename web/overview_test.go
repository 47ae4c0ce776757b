package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/views"
)

// TestOverviewShowsRootBlocker: a real lock chain becomes the
// lock.root_blocker finding on the overview, with the cancel action for an
// operator and none for a viewer, and the same findings on the API.
func TestOverviewShowsRootBlocker(t *testing.T) {
	t.Parallel()
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 100 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th})
	lc := newLockChain(t, e.url)

	op := e.client(t)
	op.login("operator")
	var m views.Overview
	require.Eventually(t, func() bool {
		resp, body := op.get("/", "Accept", "application/json")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		return findingRow(m, "lock.root_blocker") != nil
	}, 20*time.Second, 200*time.Millisecond, "no lock.root_blocker finding")
	f := findingRow(m, "lock.root_blocker")
	require.Contains(t, f.Evidence+f.Title, fmt.Sprint(lc.rootPID))
	require.Equal(t, "/runbook/blocking", f.RunbookHref)
	require.NotEmpty(t, f.Actions)
	require.Equal(t, "backend.cancel", f.Actions[0].Name)
	require.Contains(t, f.Actions[0].Href, fmt.Sprintf("pid=%d", lc.rootPID))

	resp, body := op.get("/")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `data-testid="finding-lock.root_blocker"`)
	require.Contains(t, body, `data-testid="tile-blocked"`)

	viewer := e.client(t)
	viewer.login("viewer")
	_, body = viewer.get("/", "Accept", "application/json")
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	require.Empty(t, findingRow(m, "lock.root_blocker").Actions, "a viewer gets no action buttons")

	resp, body = op.get("/api/v1/findings")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var rep diagnostics.Report
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	require.NotZero(t, rep.GeneratedAt)
}

func findingRow(m views.Overview, code string) *views.FindingRow {
	for i := range m.Findings {
		if m.Findings[i].Code == code {
			return &m.Findings[i]
		}
	}
	return nil
}
