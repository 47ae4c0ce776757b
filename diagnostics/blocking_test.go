package diagnostics_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/diagnostics/findings"
)

// A three-level chain with three real sessions: root updates row 1 and
// sits idle in transaction; a queue worker running job 42 holds row 2 and
// waits for row 1; a third session waits for row 2.
func TestBlockingTreeThreeLevelChain(t *testing.T) {
	ctx, url := freshDB(t)
	root := connect(t, url, "chain-root")
	mid := connect(t, url, "console-worker job=42")
	leaf := connect(t, url, "chain-leaf")
	_, err := root.Exec(ctx, "INSERT INTO jobs (queue, kind) SELECT 'chain', 'k' FROM generate_series(1, 2)")
	require.NoError(t, err)
	var ids []int64
	rows, _ := root.Query(ctx, "SELECT id FROM jobs ORDER BY id")
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Len(t, ids, 2)

	_, err = root.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = root.Exec(ctx, "UPDATE jobs SET priority = 1 WHERE id = $1", ids[0])
	require.NoError(t, err)
	_, err = mid.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = mid.Exec(ctx, "UPDATE jobs SET priority = 2 WHERE id = $1", ids[1])
	require.NoError(t, err)

	midDone := make(chan error, 1)
	go func() {
		_, err := mid.Exec(ctx, "UPDATE jobs SET priority = 3 WHERE id = $1", ids[0])
		midDone <- err
	}()
	leafDone := make(chan error, 1)
	go func() {
		_, err := leaf.Exec(ctx, "UPDATE jobs SET priority = 4 WHERE id = $1", ids[1])
		leafDone <- err
	}()

	d := open(t, url, diagnostics.Config{Thresholds: lowThresholds()})
	rootPID, midPID, leafPID := pidOf(root), pidOf(mid), pidOf(leaf)
	chain := awaitTreeUnder(t, d, rootPID, 3, 15*time.Second)

	require.Equal(t, rootPID, chain[0].PID)
	require.True(t, chain[0].IsRoot)
	require.Equal(t, 0, chain[0].Depth)
	require.Nil(t, chain[0].ParentPID)
	require.Equal(t, 2, chain[0].BlockedCount)
	require.Equal(t, "idle in transaction", chain[0].State)
	require.Equal(t, "chain-root", chain[0].ApplicationName)
	require.NotNil(t, chain[0].XactStart)

	require.Equal(t, midPID, chain[1].PID)
	require.Equal(t, 1, chain[1].Depth)
	require.Equal(t, rootPID, *chain[1].ParentPID)
	require.Equal(t, []int32{rootPID}, chain[1].BlockedBy)
	require.Equal(t, 1, chain[1].BlockedCount)
	require.Equal(t, "Lock", chain[1].WaitEventType)
	require.Equal(t, "transactionid", chain[1].WaitEvent)
	require.NotNil(t, chain[1].JobID, "a worker running a job carries its job id")
	require.EqualValues(t, 42, *chain[1].JobID)

	require.Equal(t, leafPID, chain[2].PID)
	require.Equal(t, 2, chain[2].Depth)
	require.Equal(t, midPID, *chain[2].ParentPID)
	require.Equal(t, 0, chain[2].BlockedCount)
	require.Nil(t, chain[2].JobID)
	require.Contains(t, chain[2].Query, "priority = 4")

	rep, err := findings.Run(ctx, d)
	require.NoError(t, err)
	f, ok := findingFor(rep, findings.CodeRootBlocker, "pid", rootPID)
	require.True(t, ok, "lock.root_blocker for pid %d in %v", rootPID, codes(rep))
	require.Equal(t, 2, f.Subject["blocked_count"])
	require.Equal(t, findings.SeverityCritical, f.Severity)
	require.Equal(t, "/runbook/blocking", f.Runbook)
	require.Contains(t, f.Actions, "backend.cancel")
	require.Contains(t, f.Evidence, "blocking_tree")
	_, ok = findingFor(rep, findings.CodeRootBlocker, "pid", midPID)
	require.False(t, ok, "only roots are reported")
	_, ok = findingFor(rep, findings.CodeIdleInTransaction, "pid", rootPID)
	require.True(t, ok, "the idle root is also idle in transaction: %v", codes(rep))

	lw := d.LockWaits(ctx)
	require.NoError(t, lw.Err)
	waiting := 0
	for _, w := range lw.Rows {
		for _, p := range w.PIDs {
			if p == midPID || p == leafPID {
				waiting++
			}
		}
	}
	require.Equal(t, 2, waiting, "both waiters in lock_waits: %+v", lw.Rows)

	// Ending the root transaction clears the chain.
	_, err = root.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, <-midDone)
	_, err = mid.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-leafDone)
	eventually(t, 10*time.Second, func() (bool, string) {
		res := d.BlockingTree(ctx)
		for _, n := range res.Rows {
			if n.PID == rootPID || n.PID == midPID || n.PID == leafPID {
				return false, nodesText(res.Rows)
			}
		}
		return res.Err == nil, res.Status()
	})
}

// awaitTreeUnder waits until the blocking tree has want nodes under the
// root rootPID (the root included) and returns them in the tree's order.
func awaitTreeUnder(t *testing.T, d *diagnostics.Diagnostics, rootPID int32, want int, within time.Duration) []diagnostics.BlockingNode {
	t.Helper()
	var nodes []diagnostics.BlockingNode
	eventually(t, within, func() (bool, string) {
		res := d.BlockingTree(context.Background())
		if res.Err != nil {
			return false, res.Status()
		}
		nodes = nil
		for _, n := range res.Rows {
			if n.RootPID == rootPID {
				nodes = append(nodes, n)
			}
		}
		return len(nodes) == want, "tree so far:" + nodesText(nodes)
	})
	return nodes
}

func nodesText(nodes []diagnostics.BlockingNode) string {
	s := ""
	for _, n := range nodes {
		s += " " + n.ApplicationName + "@" + n.State
	}
	return s
}

// Twenty sessions queue for the same row: each is blocked by every waiter
// ahead of it, so there are 2^19 paths from the root. The tree still has
// one node per backend, placed at its shortest distance from the root, and
// the query answers within its timeout.
func TestBlockingTreeLockQueue(t *testing.T) {
	ctx, url := freshDB(t)
	root := connect(t, url, "queue-root")
	var id int64
	require.NoError(t, root.QueryRow(ctx, "INSERT INTO jobs (queue, kind) VALUES ('lq', 'k') RETURNING id").Scan(&id))
	_, err := root.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = root.Exec(ctx, "UPDATE jobs SET priority = 1 WHERE id = $1", id)
	require.NoError(t, err)
	const waiters = 20
	done := make(chan error, waiters)
	for i := 0; i < waiters; i++ {
		c := connect(t, url, "queue-waiter")
		go func() {
			_, err := c.Exec(ctx, "UPDATE jobs SET priority = 2 WHERE id = $1", id)
			done <- err
		}()
	}
	t.Cleanup(func() {
		root.Exec(context.Background(), "ROLLBACK")
		for i := 0; i < waiters; i++ {
			<-done
		}
	})

	d := open(t, url, diagnostics.Config{})
	mine := awaitTreeUnder(t, d, pidOf(root), waiters+1, 20*time.Second)
	seen := map[int32]bool{}
	for _, n := range mine {
		require.False(t, seen[n.PID], "pid %d placed twice", n.PID)
		seen[n.PID] = true
		require.LessOrEqual(t, n.Depth, 2, "the first waiter holds the tuple lock; the rest wait for it")
	}
	require.Equal(t, waiters, mine[0].BlockedCount)
}
