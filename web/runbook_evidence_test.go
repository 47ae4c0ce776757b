package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/views"
)

// blockingStepCancel returns the blocking step's backend.cancel button and
// what the page says its parameters were filled in from.
func blockingStepCancel(t *testing.T, ev runbookEvidence) (href, from string) {
	t.Helper()
	i, ok := runbookStepBySlug("blocking")
	require.True(t, ok)
	m := runbookStepModel(i, "operator", ev, travel{})
	for _, a := range m.Actions {
		if a.Name == "backend.cancel" {
			return a.Href, m.ActionsFrom
		}
	}
	t.Fatalf("the blocking step offers no backend.cancel: %+v", m.Actions)
	return "", ""
}

// A runbook step fills its buttons in from a round that can be seconds
// old: a root blocker that has finished since is left out of the buttons
// (their form asks for a pid) and the page says so, instead of the step
// offering to signal a session that is gone or offering nothing.
func TestStepLeavesOutARootThatFinished(t *testing.T) {
	r := diagnostics.Round{At: time.Now(), Blocking: []diagnostics.BlockingNode{
		{PID: 7028, IsRoot: true, BlockedCount: 2}, {PID: 7030, BlockedBy: []int32{7028}}}}

	href, from := blockingStepCancel(t, runbookEvidence{round: r, guard: func(int32) error { return nil }})
	require.Contains(t, href, "pid=7028", "a live root fills the button in")
	require.Equal(t, "filled in from the evidence: pid 7028", from)

	href, from = blockingStepCancel(t, runbookEvidence{round: r, guard: func(pid int32) error {
		if pid == 7028 {
			return fmt.Errorf("backend %d is gone: %w", pid, actions.ErrNotFound)
		}
		return nil
	}})
	require.False(t, strings.Contains(href, "pid="), "a finished root is left out: %s", href)
	require.Equal(t, "/actions/backend.cancel", href)
	require.Equal(t, "pid 7028, named by the evidence, has finished since: pick one from the live blocking tree", from)
}

// On a server shared by several databases the chain that blocks the most
// can be another database's, which the console may not signal. The step
// then offers the biggest root it may signal, and says which one it passed
// over and why; when it may signal none, it keeps the biggest, whose button
// says why it is not offered.
func TestStepOffersTheRootItMaySignal(t *testing.T) {
	r := diagnostics.Round{At: time.Now(), Blocking: []diagnostics.BlockingNode{
		{PID: 8001, IsRoot: true, BlockedCount: 1, Database: "orders"},
		{PID: 8002, BlockedBy: []int32{8001}, Database: "orders"},
		{PID: 9001, IsRoot: true, BlockedCount: 5, Database: "billing"},
	}}
	otherDB := func(pid int32) error {
		if pid == 9001 {
			return fmt.Errorf("backend %d is connected to database %q, not to the console's database %q: %w", pid, "billing", "orders", actions.ErrInvalid)
		}
		return nil
	}
	href, from := blockingStepCancel(t, runbookEvidence{round: r, guard: otherDB})
	require.Contains(t, href, "pid=8001", "the root of the console's own database fills the button in")
	require.Equal(t, `filled in from the evidence: pid 8001 · pid 9001, named by the evidence, is passed over: `+
		`backend 9001 is connected to database "billing", not to the console's database "orders"`, from)

	href, from = blockingStepCancel(t, runbookEvidence{round: r, guard: nil})
	require.Contains(t, href, "pid=9001", "without a guard the biggest root is named")
	require.Equal(t, "filled in from the evidence: pid 9001", from)

	r.Blocking = append(r.Blocking, diagnostics.BlockingNode{PID: 9101, IsRoot: true, BlockedCount: 3, Database: "search"})
	href, from = blockingStepCancel(t, runbookEvidence{round: r, guard: func(pid int32) error {
		if pid != 8001 {
			return fmt.Errorf("backend %d is in another database: %w", pid, actions.ErrInvalid)
		}
		return nil
	}})
	require.Contains(t, href, "pid=8001")
	require.Equal(t, "filled in from the evidence: pid 8001 · pid 9001, named by the evidence, is passed over: "+
		"backend 9001 is in another database (and 1 more the console may not signal)", from)

	// The findings name their roots in pid order; the one blocking the
	// most is offered first.
	ev := runbookEvidence{round: r, guard: func(int32) error { return nil }, findings: []findings.Finding{
		{Code: findings.CodeRootBlocker, Subject: map[string]any{"pid": int32(8001), "blocked_count": 1}},
		{Code: findings.CodeRootBlocker, Subject: map[string]any{"pid": int32(9001), "blocked_count": 5}},
	}}
	for i := range ev.findings {
		ev.findings[i].Runbook = diagnostics.RunbookURL("blocking")
	}
	href, _ = blockingStepCancel(t, ev)
	require.Contains(t, href, "pid=9001", "the finding whose root blocks the most fills the button in")

	refuseAll := func(pid int32) error {
		return fmt.Errorf("backend %d is a background worker: %w", pid, actions.ErrInvalid)
	}
	href, from = blockingStepCancel(t, runbookEvidence{round: r, guard: refuseAll})
	require.Contains(t, href, "pid=9001", "when none may be signalled the biggest is kept, to say why")
	require.Equal(t, "filled in from the evidence: pid 9001", from)
}

// The same on a real server: another database's chain, bigger and older
// than this one's, is seen by the blocking tree, and the blocking step
// still offers to cancel this database's root.
func TestBlockingStepOffersItsOwnDatabasesRoot(t *testing.T) {
	t.Parallel()
	_, op, _, ownHolder := twoDatabaseChains(t)
	var m views.RunbookStep
	require.Equal(t, 200, op.getJSON("/runbook/blocking", &m))
	cancel := ""
	for _, a := range m.Actions {
		if a.Name == "backend.cancel" {
			cancel = a.Href
		}
	}
	require.Contains(t, cancel, fmt.Sprintf("pid=%d", ownHolder), "the step offers this database's root")
	require.Contains(t, m.ActionsFrom, fmt.Sprintf("filled in from the evidence: pid %d", ownHolder))
	// Other tests' chains run beside this one on the shared server, each in
	// its database: the first root passed over may be one of theirs.
	require.Regexp(t, `pid \d+, named by the evidence, is passed over: backend \d+ is connected to database "[^"]+", not to the console's database`,
		m.ActionsFrom, "the page says which root it passed over and why")
}

// twoDatabaseChains starts a console whose server holds two lock chains:
// another database's, whose root blocks two sessions and connected first
// (roots are in pid order, so it comes first in the tree), and the
// console's own, whose root blocks one. It returns once the blocking step's
// findings name both roots, with an operator signed in.
func twoDatabaseChains(t *testing.T) (e *env, op *client, otherHolder, ownHolder int32) {
	t.Helper()
	th := diagnostics.DefaultThresholds()
	th.RootBlockerWait = 100 * time.Millisecond
	e = setupWith(t, setupOpts{thresholds: &th})
	ctx := context.Background()

	otherHolder = holdWithWaiters(t, testdb.URL(t), "ledger", "billing-a", "billing-b")
	_, err := e.owner.Exec(ctx, "CREATE TABLE ledger (x int)")
	require.NoError(t, err)
	testdb.WaitOnLock(t, e.url, "ledger", "orders-api")
	testdb.WaitBackend(t, e.owner, "orders-api", "wait_event_type = 'Lock'")
	require.NoError(t, e.owner.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
		WHERE application_name = 'ledger-lock-holder' AND datname = current_database()`).Scan(&ownHolder))

	op = e.signedIn(t, "operator")
	var m views.RunbookStep
	names := func(pid int32) bool {
		for _, f := range m.Findings {
			if f.Code == "lock.root_blocker" && strings.HasPrefix(f.Title, fmt.Sprintf("pid %d blocks", pid)) {
				return true
			}
		}
		return false
	}
	testdb.Eventually(t, 20*time.Second, fmt.Sprintf("the step's findings to name both roots (%d, %d)", otherHolder, ownHolder), func() bool {
		require.Equal(t, 200, op.getJSON("/runbook/blocking", &m))
		return names(otherHolder) && names(ownHolder)
	})
	return e, op, otherHolder, ownHolder
}

// holdWithWaiters holds an ACCESS EXCLUSIVE lock on a new table in url's
// database and leaves one session per name waiting for it until the test
// ends; it returns the holder's pid.
func holdWithWaiters(t *testing.T, url, table string, waiters ...string) int32 {
	t.Helper()
	ctx := context.Background()
	admin := testdb.Connect(t, url, "lock-setup")
	_, err := admin.Exec(ctx, "CREATE TABLE "+pgx.Identifier{table}.Sanitize()+" (x int)")
	require.NoError(t, err)
	release := testdb.HoldLock(t, url, table)
	var holder int32
	require.NoError(t, admin.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, table+"-lock-holder").Scan(&holder))
	conns := make([]*pgx.Conn, len(waiters))
	for i, name := range waiters {
		conns[i] = testdb.Connect(t, url, name)
	}
	// Registered after the sessions, so it runs before they close
	// (cleanups run last-registered first): a session is closed only once
	// its statement has ended.
	var running sync.WaitGroup
	t.Cleanup(func() {
		release()
		running.Wait()
	})
	for i, name := range waiters {
		c := conns[i]
		running.Add(1)
		go func() {
			defer running.Done()
			_, _ = c.Exec(ctx, "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize())
		}()
		testdb.WaitBackend(t, admin, name, "wait_event_type = 'Lock'")
	}
	return holder
}
