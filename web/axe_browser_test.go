package web

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/audit"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// axeScript is axe-core's axe.min.js: $AXE_JS (the Makefile sets it from
// scripts/deps.sh axe-js), or where scripts/deps.sh axe puts it. Missing,
// the test skips loudly, and fails under CI, which installs it.
func axeScript(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv("AXE_JS")}
	for _, pattern := range []string{"/var/cache/console/axe-core-*/axe.min.js", "../.cache/axe-core-*/axe.min.js"} {
		found, _ := filepath.Glob(pattern)
		candidates = append(candidates, found...)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if b, err := os.ReadFile(c); err == nil {
			return string(b)
		}
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal("axe-core is missing and CI requires the accessibility test: scripts/deps.sh axe installs it")
	}
	t.Skip("SKIPPED: axe-core is missing (scripts/deps.sh axe installs it from npm)")
	return ""
}

// axeViolation is one rule axe found broken on a page, with the elements.
type axeViolation struct {
	ID      string   `json:"id"`
	Impact  string   `json:"impact"`
	Help    string   `json:"help"`
	Targets []string `json:"targets"`
}

// TestBrowserAxeFindsNoViolation runs axe-core's rules (WCAG 2.x A and AA
// and its best practices) on every page of a console in an incident (a
// lock chain, dead letters, an open incident), in the light and the dark
// theme, at 1440 and 390 px: no rule is broken anywhere.
func TestBrowserAxeFindsNoViolation(t *testing.T) {
	testdb.SkipShort(t, "a browser test of every page")
	script := axeScript(t)
	e := setupWith(t, setupOpts{private: true})
	ctx := context.Background()
	db := e.srv.cfg.Pool
	var deadID int64
	require.NoError(t, db.QueryRow(ctx, `INSERT INTO jobs (queue, kind, status, error_class, last_error, finished_at, attempts)
		SELECT 'emails-eu', 'send_receipt', 'dead', 'smtp.timeout', 'dial tcp 10.0.0.7:25: i/o timeout', now(), 8
		FROM generate_series(1, 5) RETURNING id`).Scan(&deadID))
	inc, err := audit.IncidentOpen(ctx, db, audit.IncidentOpenParams{Title: "checkout latency after the deploy", OpenedBy: "admin"})
	require.NoError(t, err)
	lc := newLockChain(t, e.url)

	pages := []string{"/", "/runbook", "/runbook/blocking", "/incidents", fmt.Sprintf("/incidents/%d", inc.ID),
		"/queues", "/jobs", "/jobs?status=dead", fmt.Sprintf("/jobs/%d", deadID), "/deadletters", "/outbox", "/workers",
		"/database/activity", "/database/resources", "/database/replication", "/database/maintenance", "/database/statements",
		"/database/statements?from=1h+ago&to=now",
		"/history", "/lock-episodes", "/actions", "/actions/backend.cancel?pid=" + fmt.Sprint(lc.rootPID), "/schedules", "/audit"}

	// Pages whose look the accessibility fixes changed, kept as screenshots.
	shots := map[string]string{"/runbook/blocking": "runbook-step", fmt.Sprintf("/jobs/%d", deadID): "job", fmt.Sprintf("/incidents/%d", inc.ID): "incident"}

	b := browser.New(t, 8*time.Minute)
	signIn(t, b, e.http.URL, "operator")
	checked := 0
	for _, theme := range []string{"light", "dark"} {
		browser.Get(t, b, chromedp.Evaluate[bool](`document.cookie = "console-theme=`+theme+`; path=/"; true`))
		for _, width := range []int64{1440, 390} {
			browser.Do(t, b, chromedp.EmulateViewport(width, 900))
			for _, page := range pages {
				browser.Do(t, b, chromedp.Navigate(e.http.URL+page), chromedp.WaitVisible(css(`main`)))
				// The panels that load on their own have loaded.
				browser.Get(t, b, chromedp.Poll[bool](`![...document.querySelectorAll('[data-refresh-load]')].some(s => s.textContent.includes('Loading…'))`, chromedp.WithPollingTimeout(20*time.Second)))
				require.Equal(t, theme, browser.Get(t, b, chromedp.Evaluate[string](`document.documentElement.getAttribute("data-theme")`)), page)
				// And app.js has measured the boxes they brought in.
				requireScrollersFocusable(t, b, page)
				found := browser.Get(t, b, chromedp.Evaluate[[]axeViolation](script+`;
					axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations.map(v => ({
						id: v.id, impact: v.impact || "", help: v.help, targets: v.nodes.slice(0, 5).map(n => n.target.join(" "))})))`,
					chromedp.EvalAwaitPromise))
				var said []string
				for _, v := range found {
					said = append(said, fmt.Sprintf("%s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(v.Targets, "; ")))
				}
				assert.Empty(t, said, "%s, %s theme, %d px", page, theme, width)
				if shots[page] != "" {
					browser.Screenshot(t, b, fmt.Sprintf("axe-%s-%s-%d", shots[page], theme, width))
				}
				checked++
			}
		}
	}
	require.Equal(t, 4*len(pages), checked)
}
