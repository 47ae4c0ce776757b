package web

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/browser"
	"github.com/pgconsole/console/internal/testdb"
)

// lockChain holds a real three-level chain: root runs one autocommit
// statement that locks account 1 and sleeps; middle, in a transaction, holds
// account 2 and waits for 1; leaf waits for 2. Each blocked statement's
// outcome arrives on its channel when it ends.
type lockChain struct {
	root, middle, leaf             *pgx.Conn
	rootPID                        int32
	rootDone, middleDone, leafDone <-chan error
}

func newLockChain(t *testing.T, url string) *lockChain {
	t.Helper()
	ctx := context.Background()
	connect := func(name string) *pgx.Conn { return testdb.Connect(t, url, name) }
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
	async := func(c *pgx.Conn, sql string) <-chan error {
		done := make(chan error, 1)
		running.Add(1)
		go func() {
			defer running.Done()
			_, err := c.Exec(bg, sql)
			done <- err
		}()
		return done
	}
	lc.rootDone = async(lc.root, "WITH held AS (SELECT id FROM accounts WHERE id = 1 FOR UPDATE) SELECT pg_sleep(600) FROM held")
	testdb.WaitBackend(t, admin, "orders-api", "state = 'active'")
	_, err = lc.middle.Exec(ctx, "BEGIN; UPDATE accounts SET balance = balance + 1 WHERE id = 2")
	require.NoError(t, err)
	lc.middleDone = async(lc.middle, "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
	testdb.WaitBackend(t, admin, "billing", "wait_event_type = 'Lock'")
	lc.leafDone = async(lc.leaf, "UPDATE accounts SET balance = balance + 1 WHERE id = 2")
	testdb.WaitBackend(t, admin, "reports", "wait_event_type = 'Lock'")
	return lc
}

// TestBrowserIncidentFlow walks the incident flow in headless Chromium: the
// overview shows the root blocker finding; it leads to the blocking step; an
// incident is opened and the tree captured into it; the root blocker is
// cancelled through the action's preview and confirmation. Then the
// database must show the effect (the root's statement cancelled, the waiters
// through, an audit row naming the root and linked to the incident) and the
// incident, found by the id its page shows, must hold the evidence and the
// action, in the page and in its Markdown export; sign out.
func TestBrowserIncidentFlow(t *testing.T) {
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 200 * time.Millisecond
	e := setupWith(t, setupOpts{thresholds: &th, private: true})
	db := e.owner // fixtures, and the test's own accounts table
	// An older, closed incident takes id 1, so a page that assumed the new
	// incident's id would land on the wrong one.
	_, err := db.Exec(context.Background(), `INSERT INTO incidents (title, status, opened_by, closed_by, closed_at, window_end, summary)
		VALUES ('disk full on replica', 'closed', 'admin', 'admin', now(), now(), 'grew the volume')`)
	require.NoError(t, err)
	lc := newLockChain(t, e.url)
	ctx := browser.New(t, 90*time.Second)
	shot := func(name string) { browser.Screenshot(t, ctx, "flow-"+name) }

	signIn(t, ctx, e.http.URL, "operator")
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
	heading := browser.Get(t, ctx, chromedp.Text(css(`[data-testid="incident"] h1`)))
	m := regexp.MustCompile(`^#(\d+) orders API slow`).FindStringSubmatch(heading)
	require.NotNil(t, m, "the incident page's heading %q gives no id", heading)
	incidentID, err := strconv.ParseInt(m[1], 10, 64)
	require.NoError(t, err)
	incidentPath := "/incidents/" + m[1]
	require.True(t, strings.HasSuffix(browser.Get(t, ctx, chromedp.Location()), incidentPath),
		"the heading's id %d is not the page's address", incidentID)

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
	browser.Do(t, ctx, executeWith("root blocker of the orders lock chain", "action-done")...)
	shot("4-cancel-done")
	result := browser.Get(t, ctx, chromedp.Text(css(`[data-testid="action-result"]`)))
	require.NotEmpty(t, result)

	// The database effect. The root's statement ended cancelled
	// (query_canceled: cancelled, not terminated); the middle waiter's
	// update went through, and once its transaction commits, so does the
	// leaf's.
	outcome := func(what string, ch <-chan error) error {
		t.Helper()
		select {
		case err := <-ch:
			return err
		case <-time.After(20 * time.Second):
			t.Fatalf("%s still running 20s after the cancel", what)
			return nil
		}
	}
	err = outcome("the root's statement", lc.rootDone)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "the root's statement was not cancelled: %v", err)
	require.Equal(t, "57014", pgErr.Code, "the root's statement ended with %v", err)
	require.NoError(t, outcome("the middle waiter's update", lc.middleDone))
	_, err = lc.middle.Exec(context.Background(), "COMMIT")
	require.NoError(t, err)
	require.NoError(t, outcome("the leaf waiter's update", lc.leafDone))
	rows, err := db.Query(context.Background(), "SELECT balance FROM accounts ORDER BY id")
	require.NoError(t, err)
	balances, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	require.Equal(t, []int{1, 2}, balances, "account 1 updated by the middle waiter, account 2 by the middle and the leaf")
	// One audit row, naming the root and linked to the incident.
	var target, auditOutcome, actor string
	var auditIncident *int64
	require.NoError(t, db.QueryRow(context.Background(), `SELECT target, outcome, actor, incident_id
		FROM audit_events WHERE action = 'backend.cancel'`).Scan(&target, &auditOutcome, &actor, &auditIncident))
	require.Equal(t, fmt.Sprintf("backend:%d", lc.rootPID), target, "the audit row names the root blocker")
	require.Equal(t, "succeeded", auditOutcome)
	require.Equal(t, "operator", actor)
	require.NotNil(t, auditIncident, "the cancel is not linked to the incident")
	require.Equal(t, incidentID, *auditIncident)

	// The audit row, then the incident's timeline and its export.
	followTo(t, ctx, `[data-testid="audit-link"]`, `main`)
	auditText := browser.Get(t, ctx, chromedp.Text(css(`main`)))
	require.Contains(t, auditText, "backend.cancel")
	require.Contains(t, auditText, fmt.Sprint(lc.rootPID))
	shot("5-audit")

	browser.Do(t, ctx,
		chromedp.Navigate(e.http.URL+incidentPath),
		chromedp.WaitVisible(css(`[data-testid="timeline-evidence"]`)),
		chromedp.WaitVisible(css(`[data-testid="timeline-action"]`)),
	)
	shot("6-incident")
	href := browser.Get(t, ctx, chromedp.AttributeValue(css(`[data-testid="incident-export"]`), "href"))
	md := e.fetchAs(t, "operator", href.Value)
	require.Contains(t, md, "orders API slow")
	require.Contains(t, md, "backend.cancel")
	require.Contains(t, md, fmt.Sprint(lc.rootPID))

	browser.Do(t, ctx,
		chromedp.Click(css(`[data-testid="logout"]`)),
		chromedp.WaitVisible(css(`[data-testid="login"]`)),
	)
}

// fetchAs downloads a page as the named operator with a plain HTTP client.
func (e *env) fetchAs(t *testing.T, role, path string) string {
	t.Helper()
	c := e.signedIn(t, role)
	body := c.page(path)
	return body
}
