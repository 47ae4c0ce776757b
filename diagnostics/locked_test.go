package diagnostics_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

// With ACCESS EXCLUSIVE held on jobs, every query returns within its
// timeout: the ones that read jobs say "locked by pid N", the rest answer,
// and Findings reports the locked checks as diagnostics.unavailable.
func TestQueriesUnderAccessExclusiveLockOnJobs(t *testing.T) {
	ctx, url := freshDB(t)
	holder := lockJobs(t, url)
	holderPID := pidOf(holder)

	const stmtTimeout = time.Second
	d := open(t, url, diagnostics.Config{StatementTimeout: stmtTimeout, LockTimeout: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	results := d.RunCatalog(ctx)
	locked := map[string]bool{}
	for _, r := range results {
		require.Less(t, r.Took, stmtTimeout+2*time.Second, "%s must end within its timeout", r.Name)
		if r.Err == nil {
			continue
		}
		if r.Name == "io_stats" && r.Status() != "ok" && !r.TimedOut && len(r.LockedBy) == 0 {
			continue // not available before 16
		}
		require.Contains(t, r.LockedBy, holderPID, "%s: %s", r.Name, r.Status())
		require.Equal(t, "locked by pid "+itoa(holderPID), r.Status())
		locked[r.Name] = true
	}
	require.True(t, locked["queue_health"], "queue_health reads jobs")
	require.True(t, locked["dead_letters"], "dead_letters reads jobs")
	require.False(t, locked["outbox_health"], "the outbox is not locked")

	// The blocked console query itself is hidden from the tree and activity.
	tree := d.BlockingTree(ctx)
	require.NoError(t, tree.Err)

	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	var checks []string
	for _, f := range findingsWith(rep, findings.CodeUnavailable) {
		checks = append(checks, f.Subject["check"].(string))
		if f.Subject["check"] == "queue_health" {
			require.Contains(t, f.Subject["locked_by"], holderPID)
			require.Contains(t, f.Evidence, "locked by pid "+itoa(holderPID))
			require.Equal(t, "/runbook/queues", f.Runbook)
		}
	}
	slices.Sort(checks)
	require.Contains(t, checks, "queue_health")
	require.Contains(t, checks, "dead_letters")
	require.NotContains(t, checks, "outbox_health")
	require.NotContains(t, checks, "blocking_tree")
}

// lockJobs holds ACCESS EXCLUSIVE on jobs, as a migration would, in a
// session it returns; the lock is released at cleanup.
func lockJobs(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	holder := connect(t, url, "migration")
	begin(t, holder, "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
	t.Cleanup(func() { holder.Exec(context.Background(), "ROLLBACK") })
	return holder
}

func itoa(p int32) string { return fmtInt(int64(p)) }

// Many panels at once under the lock, more than the pool holds: each still
// ends within a bounded time, locked or timed out, and the lock watcher's
// own connection still names the holder.
func TestConcurrentPanelsUnderLock(t *testing.T) {
	ctx, url := freshDB(t)
	holder := lockJobs(t, url)

	d := open(t, url, diagnostics.Config{StatementTimeout: time.Second, LockTimeout: 200 * time.Millisecond})
	const n = 12
	results := make(chan diagnostics.Result[diagnostics.QueueStat], n)
	for i := 0; i < n; i++ {
		go func() { results <- d.QueueHealth(ctx) }()
	}
	named := 0
	for i := 0; i < n; i++ {
		r := <-results
		require.Error(t, r.Err)
		require.True(t, r.TimedOut || len(r.LockedBy) > 0, r.Status())
		if slices.Contains(r.LockedBy, pidOf(holder)) {
			named++
		}
	}
	require.Positive(t, named, "the watcher connection names the holder")
}

// Statements stuck behind one lock at the same time share one lock watcher:
// three panels waiting together cost about the watcher polls one panel
// waiting alone costs, not three times as many, and each still names the
// holder. They start 60 ms apart, as panels refreshed by different viewers
// (or statements on a busy machine) do: more than the watcher's least
// slack, so sharing is the watcher putting them on one schedule.
func TestConcurrentStatementsShareOneWatcher(t *testing.T) {
	ctx, url := freshDB(t)
	holder := lockJobs(t, url)
	// Not OnDemand (open): the statements must start together, not each
	// after a connection of its own.
	d, err := diagnostics.Open(ctx, url, diagnostics.Config{StatementTimeout: 5 * time.Second, LockTimeout: 2 * time.Second, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(d.Close)
	polls := func() int64 { return d.Cost()["lock_watcher"].Statements }

	r := d.QueueHealth(ctx)
	require.Contains(t, r.LockedBy, pidOf(holder), r.Status())
	alone := polls()
	require.GreaterOrEqual(t, alone, int64(3), "a statement waiting 2s is asked about several times")

	const n = 3 // every query connection of the pool
	results := make(chan diagnostics.Result[diagnostics.QueueStat], n)
	for i := range n {
		go func() {
			time.Sleep(time.Duration(i) * 60 * time.Millisecond)
			results <- d.QueueHealth(ctx)
		}()
	}
	for range n {
		r := <-results
		require.Contains(t, r.LockedBy, pidOf(holder), r.Status())
	}
	// A watcher each would cost n times what one alone costs; a shared one
	// costs about the same as one alone, plus the polls before the
	// statements fall into step: twice alone is the line between the two.
	together := polls() - alone
	t.Logf("polls: one statement alone %d, %d together %d", alone, n, together)
	require.LessOrEqual(t, together, 2*alone, "%d statements waiting together cost %d polls; one alone cost %d", n, together, alone)
}
