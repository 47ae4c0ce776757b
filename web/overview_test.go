package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
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

	// The shared test server may hold other tests' lock chains: each root
	// has its own finding, and this test's is the one naming its root.
	root := fmt.Sprintf("pid %d ", lc.rootPID)
	op := e.signedIn(t, "operator")
	var m views.Overview
	require.Eventually(t, func() bool {
		body := op.page("/", "Accept", "application/json")
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		return findingRow(m, "lock.root_blocker", root) != nil
	}, 20*time.Second, 200*time.Millisecond, "no lock.root_blocker finding for the chain's root (%s)", root)
	f := findingRow(m, "lock.root_blocker", root)
	require.Equal(t, "/runbook/blocking", f.RunbookHref)
	require.NotEmpty(t, f.Actions)
	require.Equal(t, "backend.cancel", f.Actions[0].Name)
	require.Contains(t, f.Actions[0].Href, fmt.Sprintf("pid=%d", lc.rootPID))

	body := op.page("/")
	require.Contains(t, body, `data-testid="finding-lock.root_blocker"`)
	require.Contains(t, body, `data-testid="tile-blocked"`)

	viewer := e.signedIn(t, "viewer")
	_, body = viewer.get("/", "Accept", "application/json")
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	require.Empty(t, findingRow(m, "lock.root_blocker", root).Actions, "a viewer gets no action buttons")

	body = op.page("/api/v1/findings")
	var rep findings.Report
	require.NoError(t, json.Unmarshal([]byte(body), &rep))
	require.NotZero(t, rep.GeneratedAt)
}

// findingRow is the overview's finding of code whose title names subject.
func findingRow(m views.Overview, code, subject string) *views.FindingRow {
	for i := range m.Findings {
		if m.Findings[i].Code == code && strings.Contains(m.Findings[i].Title, subject) {
			return &m.Findings[i]
		}
	}
	return nil
}

// TestOverviewSaysWhenItsRoundRan: rounds are shared, so the page says when
// its round started; the top bar's version and role come from diagnostics'
// ServerInfo.
func TestOverviewSaysWhenItsRoundRan(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := e.signedIn(t, "viewer")
	var m views.Overview
	body := c.page("/", "Accept", "application/json")
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	at, err := time.Parse(time.RFC3339, m.GeneratedAt)
	require.NoError(t, err)
	require.Equal(t, "as of "+at.Format("15:04:05")+" UTC", m.AsOf)

	body = c.page("/")
	require.Contains(t, body, `data-testid="findings-as-of">as of `)
	info, err := e.srv.cfg.Diagnostics.ServerInfo(t.Context())
	require.NoError(t, err)
	version, _, _ := strings.Cut(info.Version, " ")
	require.Contains(t, body, "<span>PostgreSQL "+version+"</span>")
	require.Contains(t, body, "<span>primary</span>")
}

func TestTopBarInfo(t *testing.T) {
	require.Equal(t, dbInfo{server: "PostgreSQL 15.13", role: "primary"},
		topBarInfo(diagnostics.Server{Version: "15.13 (Debian 15.13-0+deb12u1)"}))
	require.Equal(t, dbInfo{server: "PostgreSQL 18.1", role: "standby"},
		topBarInfo(diagnostics.Server{Version: "18.1", InRecovery: true}))
}

func TestOverviewModelAsOf(t *testing.T) {
	at := time.Date(2026, 6, 20, 14, 3, 7, 0, time.FixedZone("CEST", 2*3600))
	m := overviewModel(diagnostics.Round{At: at}, nil, diagnostics.DefaultThresholds(), "viewer", at)
	require.Equal(t, "as of 12:03:07 UTC", m.AsOf)
	require.Equal(t, "2026-06-20T12:03:07Z", m.GeneratedAt)
}
