package web

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/browser"
)

// lockChain holds a real three-level chain: root runs one autocommit
// statement that locks account 1 and sleeps; middle, in a transaction, holds
// account 2 and waits for 1; leaf waits for 2.
type lockChain struct {
	root, middle, leaf *pgx.Conn
	rootPID            int32
}

func newLockChain(t *testing.T, url string) *lockChain {
	t.Helper()
	ctx := context.Background()
	connect := func(name string) *pgx.Conn {
		cfg, err := pgx.ParseConfig(url)
		require.NoError(t, err)
		cfg.RuntimeParams["application_name"] = name
		c, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	admin := connect("test-setup")
	_, err := admin.Exec(ctx, `CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL DEFAULT 0);
		INSERT INTO accounts (id) VALUES (1), (2)`)
	require.NoError(t, err)

	lc := &lockChain{root: connect("orders-api"), middle: connect("billing"), leaf: connect("reports")}
	require.NoError(t, lc.root.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&lc.rootPID))

	// Statements that block run in goroutines; a connection is not safe
	// for concurrent use, so cleanup cancels them and waits before the
	// connections close (cleanups run last-registered first).
	bg, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		running.Wait()
	})
	async := func(c *pgx.Conn, sql string) {
		running.Add(1)
		go func() {
			defer running.Done()
			_, _ = c.Exec(bg, sql)
		}()
	}
	// A plain polling loop, not require.Eventually: its condition runs in
	// a goroutine of its own, and a pgx connection is not safe for that.
	started := func(app string, waiting bool) {
		q := "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active'"
		if waiting {
			q += " AND wait_event_type = 'Lock'"
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var n int
			require.NoError(t, admin.QueryRow(ctx, q, app).Scan(&n))
			if n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not reach its lock within 30s", app)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	async(lc.root, "WITH held AS (SELECT id FROM accounts WHERE id = 1 FOR UPDATE) SELECT pg_sleep(600) FROM held")
	started("orders-api", false)
	_, err = lc.middle.Exec(ctx, "BEGIN; UPDATE accounts SET balance = balance + 1 WHERE id = 2")
	require.NoError(t, err)
	async(lc.middle, "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
	started("billing", true)
	async(lc.leaf, "UPDATE accounts SET balance = balance + 1 WHERE id = 2")
	started("reports", true)
	return lc
}

// TestBrowserIncidentFlow walks the mission's incident flow in headless
// Chromium: the overview shows the root blocker finding; it leads to the
// blocking step; an incident is opened and the tree captured into it; the
// root blocker is cancelled through the action's preview and confirmation;
// the audit row and the Markdown export show it; sign out.
func TestBrowserIncidentFlow(t *testing.T) {
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 200 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th})
	lc := newLockChain(t, e.url)
	ctx := browser.New(t, 90*time.Second)
	shot := func(name string) { browser.Screenshot(t, ctx, "flow-"+name) }

	browser.Do(t, ctx,
		chromedp.Navigate(e.http.URL+"/login"),
		chromedp.SendKeys(css(`#name`), "operator"),
		chromedp.SendKeys(css(`#password`), testPassword),
		chromedp.Click(css(`[data-testid="login-submit"]`)),
		chromedp.WaitVisible(css(`[data-testid="findings"]`)),
	)
	// The overview refreshes itself every 10 seconds; the finding appears
	// once the waiters have waited past the threshold.
	browser.Do(t, ctx, chromedp.WaitVisible(css(`[data-testid="finding-lock.root_blocker"]`)))
	finding := browser.Get(t, ctx, chromedp.Text(css(`[data-testid="finding-lock.root_blocker"]`)))
	require.Contains(t, finding, fmt.Sprint(lc.rootPID), "the finding names the root blocker's pid")
	shot("1-overview")

	// Open an incident first so the evidence has somewhere to go.
	browser.Do(t, ctx,
		chromedp.Navigate(e.http.URL+"/incidents"),
		chromedp.SendKeys(css(`[data-testid="incident-title"]`), "orders API slow: lock chain"),
		chromedp.Click(css(`[data-testid="incident-open"]`)),
		chromedp.WaitVisible(css(`[data-testid="incident"]`)),
	)

	// Follow the finding to its runbook step.
	browser.Do(t, ctx,
		chromedp.Navigate(e.http.URL+"/"),
		chromedp.Click(css(`[data-testid="finding-lock.root_blocker"] [data-testid="finding-runbook"]`)),
		chromedp.WaitVisible(css(`[data-testid="runbook-step-blocking"]`)),
		chromedp.WaitVisible(css(`[data-testid="panel-blocking_tree"] table`)),
	)
	tree := browser.Get(t, ctx, chromedp.Text(css(`[data-testid="panel-blocking_tree"]`)))
	require.Contains(t, tree, "root blocker")
	require.Contains(t, tree, fmt.Sprint(lc.rootPID))
	shot("2-blocking-step")

	browser.Do(t, ctx,
		chromedp.Click(css(`[data-testid="capture-blocking_tree"]`)),
		chromedp.WaitVisible(css(`[data-testid="captured"]`)),
	)

	// Cancel the root blocker from the tree: preview, reason, execute.
	browser.Do(t, ctx,
		chromedp.Click(css(`[data-testid="panel-blocking_tree"] [data-testid="action-backend.cancel"]`)),
		chromedp.WaitVisible(css(`[data-testid="action-form-edit"]`)),
		chromedp.Click(css(`[data-testid="action-preview-button"]`)),
		chromedp.WaitVisible(css(`[data-testid="action-preview"]`)),
	)
	shot("3-cancel-preview")
	browser.Do(t, ctx,
		chromedp.SendKeys(css(`[data-testid="reason"]`), "root blocker of the orders lock chain"),
		chromedp.Click(css(`[data-testid="action-execute"]`)),
		chromedp.WaitVisible(css(`[data-testid="action-done"]`)),
	)
	shot("4-cancel-done")
	result := browser.Get(t, ctx, chromedp.Text(css(`[data-testid="action-result"]`)))
	require.NotEmpty(t, result)

	// The audit row, then the incident's timeline and its export.
	browser.Do(t, ctx,
		chromedp.Click(css(`[data-testid="audit-link"]`)),
		chromedp.WaitVisible(css(`main`)),
	)
	auditText := browser.Get(t, ctx, chromedp.Text(css(`main`)))
	require.Contains(t, auditText, "backend.cancel")
	shot("5-audit")

	browser.Do(t, ctx,
		chromedp.Navigate(e.http.URL+"/incidents/1"),
		chromedp.WaitVisible(css(`[data-testid="timeline-evidence"]`)),
		chromedp.WaitVisible(css(`[data-testid="timeline-action"]`)),
	)
	shot("6-incident")
	href := browser.Get(t, ctx, chromedp.AttributeValue(css(`[data-testid="incident-export"]`), "href"))
	md := e.fetchAs(t, "operator", href.Value)
	require.Contains(t, md, "orders API slow")
	require.Contains(t, md, "backend.cancel")

	browser.Do(t, ctx,
		chromedp.Click(css(`[data-testid="logout"]`)),
		chromedp.WaitVisible(css(`[data-testid="login"]`)),
	)
}

// fetchAs downloads a page as the named operator with a plain HTTP client.
func (e *env) fetchAs(t *testing.T, role, path string) string {
	t.Helper()
	c := e.client(t)
	c.login(role)
	resp, body := c.get(path)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	return body
}
