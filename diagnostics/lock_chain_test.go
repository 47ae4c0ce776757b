package diagnostics_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

// nodeOf returns the node of pid in rows, failing the test without one.
func nodeOf(t *testing.T, rows []diagnostics.BlockingNode, pid int32) diagnostics.BlockingNode {
	t.Helper()
	for _, n := range rows {
		if n.PID == pid && n.Kind == diagnostics.NodeBackend {
			return n
		}
	}
	t.Fatalf("pid %d is not in the tree: %s", pid, treeText(rows))
	return diagnostics.BlockingNode{}
}

// hasPID reports whether pid is a node of rows.
func hasPID(pid int32) func([]diagnostics.BlockingNode) bool {
	return func(rows []diagnostics.BlockingNode) bool {
		for _, n := range rows {
			if n.PID == pid {
				return true
			}
		}
		return false
	}
}

// scalar reads one value on c.
func scalar[T any](t *testing.T, c *pgx.Conn, sql string, args ...any) T {
	t.Helper()
	var v T
	require.NoError(t, c.QueryRow(context.Background(), sql, args...).Scan(&v))
	return v
}

// staged is a lock shape set up on the server: who holds, who waits, and
// what the waiter's lock target reads as.
type staged struct {
	holder, waiter *pgx.Conn
	target         string
}

// Every node says what is locked and how: the lock's type, its target in
// words, the mode the waiter wants and the mode its blocker holds. Each
// shape is staged on the real server; the root finding carries the same.
func TestBlockingTreeExplainsEachLockShape(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, lockType, wanted, held string
		stage                        func(t *testing.T, url string) staged
	}{
		{"Row", "transactionid", "ShareLock", "ExclusiveLock", func(t *testing.T, url string) staged {
			h, w := connect(t, url, "x-holder"), connect(t, url, "x-waiter")
			_, err := h.Exec(context.Background(), "INSERT INTO jobs (queue, kind) VALUES ('x', 'k')")
			require.NoError(t, err)
			begin(t, h, "UPDATE jobs SET priority = 1 WHERE queue = 'x'")
			xid := scalar[string](t, h, "SELECT pg_current_xact_id()::text")
			stall(t, h, w, "UPDATE jobs SET priority = 2 WHERE queue = 'x'")
			return staged{h, w, fmt.Sprintf("transaction %s of pid %d", xid, pidOf(h))}
		}},
		{"Table", "relation", "RowExclusiveLock", "ShareLock", func(t *testing.T, url string) staged {
			return heldAndWaited(t, url, "LOCK TABLE jobs IN SHARE MODE", "INSERT INTO jobs (queue, kind) VALUES ('x', 'k')", "jobs")
		}},
		{"Advisory", "advisory", "ExclusiveLock", "ExclusiveLock", func(t *testing.T, url string) staged {
			return heldAndWaited(t, url, "SELECT pg_advisory_xact_lock(42)", "SELECT pg_advisory_xact_lock(42)", "advisory lock 42")
		}},
		{"AdvisoryPairShared", "advisory", "ExclusiveLock", "ShareLock", func(t *testing.T, url string) staged {
			return heldAndWaited(t, url, "SELECT pg_advisory_xact_lock_shared(1, -7)", "SELECT pg_advisory_xact_lock(1, -7)", "advisory lock (1, -7)")
		}},
		{"NegativeKey", "advisory", "ExclusiveLock", "ExclusiveLock", func(t *testing.T, url string) staged {
			return heldAndWaited(t, url, "SELECT pg_advisory_xact_lock(-5000000000)", "SELECT pg_advisory_xact_lock(-5000000000)", "advisory lock -5000000000")
		}},
		{"VirtualTransaction", "virtualxid", "ShareLock", "ExclusiveLock", func(t *testing.T, url string) staged {
			h, w := connect(t, url, "x-holder"), connect(t, url, "x-waiter")
			_, err := h.Exec(context.Background(), "CREATE TABLE cic (n int)")
			require.NoError(t, err)
			begin(t, h, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ", "SELECT count(*) FROM pg_class")
			vxid := scalar[string](t, h, "SELECT virtualxid FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'virtualxid'")
			stall(t, h, w, "CREATE INDEX CONCURRENTLY cic_n ON cic (n)")
			return staged{h, w, fmt.Sprintf("virtual transaction %s of pid %d", vxid, pidOf(h))}
		}},
		{"TableOfAnotherDatabase", "relation", "RowExclusiveLock", "ShareLock", func(t *testing.T, url string) staged {
			other := testdb.URL(t)
			h, w := connect(t, other, "x-holder"), connect(t, other, "x-waiter")
			begin(t, h, "LOCK TABLE jobs IN SHARE MODE")
			oid := scalar[uint32](t, h, "SELECT 'jobs'::regclass::oid")
			db := scalar[string](t, h, "SELECT current_database()")
			stall(t, h, w, "INSERT INTO jobs (queue, kind) VALUES ('x', 'k')")
			return staged{h, w, fmt.Sprintf("relation %d in database %s", oid, db)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, url := freshDB(t)
			s := tc.stage(t, url)
			d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
			rows := treeWhere(t, d, hasPID(pidOf(s.waiter)))
			w, root := nodeOf(t, rows, pidOf(s.waiter)), nodeOf(t, rows, pidOf(s.holder))
			require.True(t, root.IsRoot, treeText(rows))
			require.Equal(t, pidOf(s.holder), *w.ParentPID)

			require.Equal(t, tc.lockType, w.LockType)
			require.Equal(t, s.target, w.LockTarget)
			require.Equal(t, tc.wanted, w.ModeWanted)
			require.Equal(t, tc.held, w.ModeHeld)
			require.True(t, w.HeldGranted)
			require.Equal(t, fmt.Sprintf("wants %s on %s (%s); pid %d holds %s", tc.wanted, w.LockTarget, tc.lockType, pidOf(s.holder), tc.held), w.LockText())

			// The root says what it holds that its waiter wants.
			require.Equal(t, tc.lockType, root.LockType)
			require.Equal(t, w.LockTarget, root.LockTarget)
			require.Equal(t, tc.held, root.ModeHeld)
			require.Equal(t, tc.wanted, root.ModeWanted)
			require.Equal(t, fmt.Sprintf("holds %s on %s (%s), wanted as %s", tc.held, w.LockTarget, tc.lockType, tc.wanted), root.LockText())

			rep, err := findings.Run(ctx, d)
			require.NoError(t, err)
			f, ok := findingFor(rep, findings.CodeRootBlocker, "pid", pidOf(s.holder))
			require.True(t, ok, "lock.root_blocker for %d in %v", pidOf(s.holder), codes(rep))
			require.Equal(t, tc.lockType, f.Subject["lock_type"])
			require.Equal(t, w.LockTarget, f.Subject["lock_target"])
			require.Equal(t, tc.held, f.Subject["mode_held"])
			require.Equal(t, tc.wanted, f.Subject["mode_wanted"])
			require.Contains(t, f.Evidence, "it "+root.LockText())
		})
	}
}

// heldAndWaited stages a holder that runs hold in a transaction and a
// waiter whose wait statement waits for it; target is what the waiter's
// lock reads as.
func heldAndWaited(t *testing.T, url, hold, wait, target string) staged {
	t.Helper()
	h, w := connect(t, url, "x-holder"), connect(t, url, "x-waiter")
	begin(t, h, hold)
	stall(t, h, w, wait)
	return staged{h, w, target}
}

// stall opens a transaction on w and runs sql in it in the background (a
// CREATE INDEX CONCURRENTLY, which runs in none, on its own); the holder's
// transaction is rolled back at cleanup, then w's.
func stall(t *testing.T, h, w *pgx.Conn, sql string) {
	t.Helper()
	if !strings.Contains(sql, "CONCURRENTLY") {
		begin(t, w)
	}
	done := waitIn(w, sql)
	t.Cleanup(func() {
		h.Exec(context.Background(), "ROLLBACK")
		<-done
		w.Exec(context.Background(), "ROLLBACK")
	})
}

// A second waiter on a row waits on the tuple lock the first waiter holds
// while that one waits on the holder's transaction.
func TestBlockingTreeExplainsTupleLock(t *testing.T) {
	ctx, url := freshDB(t)
	h, w1, w2 := connect(t, url, "x-holder"), connect(t, url, "x-first"), connect(t, url, "x-second")
	_, err := h.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('x', 'k')")
	require.NoError(t, err)
	begin(t, h, "UPDATE jobs SET priority = 1 WHERE queue = 'x'")
	begin(t, w1)
	begin(t, w2)
	d1 := waitIn(w1, "UPDATE jobs SET priority = 2 WHERE queue = 'x'")
	d := open(t, url, diagnostics.Config{})
	treeWhere(t, d, hasPID(pidOf(w1)))
	d2 := waitIn(w2, "UPDATE jobs SET priority = 3 WHERE queue = 'x'")
	t.Cleanup(func() {
		h.Exec(context.Background(), "ROLLBACK")
		<-d1
		w1.Exec(context.Background(), "ROLLBACK")
		<-d2
	})
	rows := treeWhere(t, d, hasPID(pidOf(w2)))
	n := nodeOf(t, rows, pidOf(w2))
	require.Equal(t, "tuple", n.LockType, treeText(rows))
	require.Regexp(t, `^row \(\d+,\d+\) of jobs$`, n.LockTarget)
	require.Equal(t, "ExclusiveLock", n.ModeWanted)
	require.Equal(t, pidOf(w1), *n.ParentPID)
	require.Equal(t, "ExclusiveLock", n.ModeHeld)
	require.True(t, n.HeldGranted)
}

// The ALTER TABLE trap: an ALTER wanting ACCESS EXCLUSIVE waits behind a
// reader idle in its transaction, and plain reads queue behind the ALTER's
// request. The reader stays the root; the finding names the ALTER as the
// head of the queue, with how many sessions queue behind it.
func TestRootFindingNamesTheLockQueueHead(t *testing.T) {
	ctx, url := freshDB(t)
	setup := connect(t, url, "setup")
	_, err := setup.Exec(ctx, "CREATE TABLE accounts (id int PRIMARY KEY)")
	require.NoError(t, err)
	reader := connect(t, url, "report")
	begin(t, reader, "SELECT count(*) FROM accounts")
	ddl := connect(t, url, "migrate")
	begin(t, ddl)
	ddlDone := waitIn(ddl, "ALTER TABLE accounts ADD COLUMN note text")
	d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
	treeWhere(t, d, hasPID(pidOf(ddl)))
	const readers = 3
	var late []*pgx.Conn
	var lateDone []<-chan error
	for i := range readers {
		c := connect(t, url, fmt.Sprintf("web-%d", i))
		late = append(late, c)
		lateDone = append(lateDone, waitIn(c, "SELECT count(*) FROM accounts"))
	}
	t.Cleanup(func() {
		reader.Exec(context.Background(), "ROLLBACK")
		<-ddlDone
		ddl.Exec(context.Background(), "ROLLBACK")
		for _, c := range lateDone {
			<-c
		}
	})
	rows := treeWhere(t, d, func(rows []diagnostics.BlockingNode) bool {
		for _, c := range late {
			if !hasPID(pidOf(c))(rows) {
				return false
			}
		}
		return true
	})
	alter := nodeOf(t, rows, pidOf(ddl))
	require.Equal(t, "AccessExclusiveLock", alter.ModeWanted)
	require.Equal(t, "AccessShareLock", alter.ModeHeld)
	require.True(t, alter.HeldGranted)
	for _, c := range late {
		n := nodeOf(t, rows, pidOf(c))
		require.Equal(t, pidOf(ddl), *n.ParentPID, treeText(rows))
		require.Equal(t, "AccessShareLock", n.ModeWanted)
		require.Equal(t, "AccessExclusiveLock", n.ModeHeld, "the ALTER's request is what the reads queue behind")
		require.False(t, n.HeldGranted, "the ALTER holds nothing yet")
		require.Contains(t, n.LockText(), fmt.Sprintf("queued behind pid %d, which asked first for AccessExclusiveLock and waits too", pidOf(ddl)))
	}

	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	f, ok := findingFor(rep, findings.CodeRootBlocker, "pid", pidOf(reader))
	require.True(t, ok, "the reader stays the root: %v", codes(rep))
	_, ok = findingFor(rep, findings.CodeRootBlocker, "pid", pidOf(ddl))
	require.False(t, ok, "the ALTER is not a root: %v", codes(rep))
	require.Contains(t, f.Evidence, fmt.Sprintf("%d sessions queue behind pid %d's ALTER TABLE accounts (wants AccessExclusiveLock on accounts), which waits for pid %d (idle in transaction, transaction ",
		readers, pidOf(ddl), pidOf(reader)), f.Evidence)
	head, ok := f.Subject["queue_head"].(map[string]any)
	require.True(t, ok, "%v", f.Subject)
	require.Equal(t, pidOf(ddl), head["pid"])
	require.Equal(t, readers, head["blocked_count"])
	require.Equal(t, "AccessExclusiveLock", head["mode_wanted"])
	require.Equal(t, []string{findings.ActionBackendTerminate, findings.ActionBackendCancel}, f.Actions)
}
