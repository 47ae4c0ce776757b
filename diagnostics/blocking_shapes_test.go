package diagnostics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
	"github.com/pgconsole/console/internal/testdb"
)

// begin starts a transaction on c with sql, failing the test on error.
func begin(t *testing.T, c *pgx.Conn, sql ...string) {
	t.Helper()
	_, err := c.Exec(context.Background(), "BEGIN")
	require.NoError(t, err)
	for _, s := range sql {
		_, err := c.Exec(context.Background(), s)
		require.NoError(t, err)
	}
}

// waitIn runs sql on c in the background; the returned channel gets its
// error once the statement ends.
func waitIn(c *pgx.Conn, sql string, args ...any) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), sql, args...)
		done <- err
	}()
	return done
}

// treeWhere polls the blocking tree until cond holds for its rows.
func treeWhere(t *testing.T, d *diagnostics.Diagnostics, cond func([]diagnostics.BlockingNode) bool) []diagnostics.BlockingNode {
	t.Helper()
	var rows []diagnostics.BlockingNode
	eventually(t, 20*time.Second, func() (bool, string) {
		res := d.BlockingTree(context.Background())
		if res.Err != nil {
			return false, res.Status()
		}
		rows = res.Rows
		return cond(rows), treeText(rows)
	})
	return rows
}

func treeText(nodes []diagnostics.BlockingNode) string {
	s := ""
	for _, n := range nodes {
		s += fmt.Sprintf(" [%s pid=%d gid=%q depth=%d parent=%v/%q blocks=%d]", n.Kind, n.PID, n.GID, n.Depth, n.ParentPID, n.ParentGID, n.BlockedCount)
	}
	return s
}

// A prepared transaction holds a lock with no process behind it:
// pg_blocking_pids reports it as pid 0. It is still the root, named by its
// gid, whether it holds a row (the waiter waits on its transaction id) or a
// table lock (the waiter waits on the relation).
func TestBlockingTreePreparedTransactionRoot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, hold, wait string
	}{
		{"Row", "UPDATE jobs SET priority = 1 WHERE queue = 'px'", "UPDATE jobs SET priority = 2 WHERE queue = 'px'"},
		{"Table", "LOCK TABLE jobs IN SHARE MODE", "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, url := freshDB(t)
			holder := connect(t, url, "px-holder")
			_, err := holder.Exec(ctx, "INSERT INTO jobs (queue, kind) VALUES ('px', 'k')")
			require.NoError(t, err)
			gid := "px-" + tc.name + "-" + fmt.Sprint(time.Now().UnixNano())
			begin(t, holder, tc.hold, "PREPARE TRANSACTION '"+gid+"'")
			t.Cleanup(func() { holder.Exec(context.Background(), "ROLLBACK PREPARED '"+gid+"'") })

			waiter := connect(t, url, "px-waiter")
			begin(t, waiter)
			done := waitIn(waiter, tc.wait)
			t.Cleanup(func() {
				holder.Exec(context.Background(), "ROLLBACK PREPARED '"+gid+"'")
				<-done
			})

			d := open(t, url, diagnostics.Config{})
			rows := treeWhere(t, d, func(rows []diagnostics.BlockingNode) bool {
				for _, n := range rows {
					if n.PID == pidOf(waiter) {
						return true
					}
				}
				return false
			})
			var root, w *diagnostics.BlockingNode
			for i := range rows {
				switch {
				case rows[i].GID == gid:
					root = &rows[i]
				case rows[i].PID == pidOf(waiter):
					w = &rows[i]
				}
			}
			require.NotNil(t, root, "the prepared transaction is a node: %s", treeText(rows))
			require.NotNil(t, w)
			require.Equal(t, diagnostics.NodePrepared, root.Kind)
			require.True(t, root.IsRoot)
			require.True(t, root.IsPrepared())
			require.Equal(t, 1, root.BlockedCount)
			require.NotNil(t, root.PreparedAt)
			require.NotEmpty(t, root.Owner)
			require.NotEmpty(t, root.Database)
			require.Equal(t, 1, w.Depth)
			require.Equal(t, gid, w.ParentGID)
			require.Nil(t, w.ParentPID)
			require.Equal(t, gid, w.RootGID)
			require.Equal(t, []string{gid}, w.BlockedByGIDs)

			// Its finding names the gid, links the prepared-transaction
			// runbook and offers only the rollback: there is no process
			// to cancel or terminate.
			th := diagnostics.DefaultThresholds()
			th.RootBlockerWait = 0
			d.SetThresholds(th)
			rep, err := findings.Run(ctx, d)
			require.NoError(t, err)
			f, ok := findingFor(rep, findings.CodeRootBlocker, "gid", gid)
			require.True(t, ok, "lock.root_blocker for %s in %v", gid, codes(rep))
			require.Equal(t, "/runbook/rb-l", f.Runbook)
			require.Equal(t, []string{findings.ActionPreparedRollback}, f.Actions)
			require.Equal(t, 1, f.Subject["blocked_count"])
			require.NotEmpty(t, f.Subject["owner"])
			require.NotEmpty(t, f.Subject["database"])
			require.Equal(t, root.PreparedAt.UTC(), f.Subject["prepared_at"])
			require.Contains(t, f.Evidence, gid)
			_, ok = findingFor(rep, findings.CodeRootBlocker, "pid", 0)
			require.False(t, ok, "no finding names pid 0: %v", codes(rep))
		})
	}
}

// Two readers hold ACCESS SHARE while an ACCESS EXCLUSIVE request waits for
// both and queues two more readers behind it. Each reader is a root, and
// each counts all three sessions it holds up.
func TestBlockingTreeEveryRootReported(t *testing.T) {
	ctx, url := freshDB(t)
	r1, r2 := connect(t, url, "reader-1"), connect(t, url, "reader-2")
	begin(t, r1, "SELECT count(*) FROM jobs")
	begin(t, r2, "SELECT count(*) FROM jobs")
	ddl := connect(t, url, "ddl")
	begin(t, ddl)
	ddlDone := waitIn(ddl, "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
	d := open(t, url, diagnostics.Config{})
	treeWhere(t, d, func(rows []diagnostics.BlockingNode) bool {
		for _, n := range rows {
			if n.PID == pidOf(ddl) {
				return true
			}
		}
		return false
	})
	late1, late2 := connect(t, url, "late-1"), connect(t, url, "late-2")
	l1 := waitIn(late1, "SELECT count(*) FROM jobs")
	l2 := waitIn(late2, "SELECT count(*) FROM jobs")
	t.Cleanup(func() {
		r1.Exec(context.Background(), "ROLLBACK")
		r2.Exec(context.Background(), "ROLLBACK")
		<-ddlDone
		ddl.Exec(context.Background(), "ROLLBACK")
		<-l1
		<-l2
	})

	rows := treeWhere(t, d, func(rows []diagnostics.BlockingNode) bool {
		n := 0
		for _, x := range rows {
			if x.PID == pidOf(late1) || x.PID == pidOf(late2) {
				n++
			}
		}
		return n == 2
	})
	var db string
	require.NoError(t, r1.QueryRow(ctx, "SELECT current_database()").Scan(&db))
	roots := map[int32]diagnostics.BlockingNode{}
	for _, n := range rows {
		if n.IsRoot && n.Database == db {
			roots[n.PID] = n
		}
	}
	for _, r := range []*pgx.Conn{r1, r2} {
		n, ok := roots[pidOf(r)]
		require.True(t, ok, "reader %d is a root: %s", pidOf(r), treeText(rows))
		require.Equal(t, 3, n.BlockedCount, "reader %d holds up the DDL and both late readers: %s", pidOf(r), treeText(rows))
	}
	require.Len(t, roots, 2, treeText(rows))
}

// Any client may call itself by the console's names: a session named like
// the console's diagnostics pool or a console process is still shown, as a
// root and as idle in transaction. Only this process's own diagnostics
// connections are left out, by pid: one that queues behind the lock while
// the tree is read is not a node of it.
func TestBlockingTreeHidesOnlyOwnConnections(t *testing.T) {
	ctx, url := freshDB(t)
	impostor := connect(t, url, diagnostics.ApplicationName)
	begin(t, impostor, "SELECT count(*) FROM jobs")
	ddl := connect(t, url, "console-web")
	begin(t, ddl)
	ddlDone := waitIn(ddl, "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
	t.Cleanup(func() {
		impostor.Exec(context.Background(), "ROLLBACK")
		<-ddlDone
		ddl.Exec(context.Background(), "ROLLBACK")
	})

	// The DDL must be queued before d reads the queues, or the read takes
	// its lock first, ends, and never waits.
	watch := connect(t, url, "watch")
	testdb.WaitBackend(t, watch, "console-web", "wait_event_type = 'Lock'")

	d := open(t, url, diagnostics.Config{LockTimeout: 10 * time.Second, StatementTimeout: 15 * time.Second, MaxConns: 4})
	// One of d's own connections queues behind the DDL.
	queued := make(chan struct{})
	// Canceled at cleanup: it would otherwise wait out its lock timeout.
	queuedCtx, stopQueued := context.WithCancel(ctx)
	go func() {
		defer close(queued)
		d.QueueHealth(queuedCtx)
	}()
	t.Cleanup(func() { stopQueued(); <-queued })
	var ownWaiter int32
	eventually(t, 15*time.Second, func() (bool, string) {
		err := watch.QueryRow(ctx, `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock' AND pid <> $2 LIMIT 1`,
			diagnostics.ApplicationName, pidOf(impostor)).Scan(&ownWaiter)
		return err == nil, fmt.Sprint(err)
	})

	rows := treeWhere(t, d, func(rows []diagnostics.BlockingNode) bool {
		for _, n := range rows {
			if n.PID == pidOf(ddl) {
				return true
			}
		}
		return false
	})
	var root *diagnostics.BlockingNode
	for i := range rows {
		require.NotEqual(t, ownWaiter, rows[i].PID, "the console's own diagnostics backend is not part of the tree: %s", treeText(rows))
		if rows[i].PID == pidOf(impostor) {
			root = &rows[i]
		}
	}
	require.NotNil(t, root, "a session is shown whatever it calls itself: %s", treeText(rows))
	require.True(t, root.IsRoot)

	idle := d.IdleInTransaction(ctx)
	require.NoError(t, idle.Err)
	found := false
	for _, it := range idle.Rows {
		found = found || it.PID == pidOf(impostor)
	}
	require.True(t, found, "idle in transaction lists the impostor: %+v", idle.Rows)
	act := d.Activity(ctx)
	require.NoError(t, act.Err)
	found = false
	for _, b := range act.Rows {
		require.NotEqual(t, ownWaiter, b.PID, "activity leaves the console's own backend out")
		found = found || b.PID == pidOf(impostor)
	}
	require.True(t, found, "activity lists the impostor")
}
