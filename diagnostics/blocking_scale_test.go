package diagnostics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
)

// hotRow starts a dedicated server where one session holds a row that
// waiters other sessions wait to update, the shape of a hot row during an
// incident. It returns the server's URL and the holder's pid; everything is
// released at cleanup.
func hotRow(tb testing.TB, waiters int) (string, int32) {
	tb.Helper()
	srv := testdb.NewServer(tb, withSettings(map[string]string{"max_connections": fmt.Sprint(waiters + 50)}))
	url := srv.URL("postgres")
	_, err := testdb.Connect(tb, url, "hot-setup").Exec(context.Background(),
		"CREATE TABLE hot (id int PRIMARY KEY, n int); INSERT INTO hot VALUES (1, 0)")
	require.NoError(tb, err)
	return url, holdRow(tb, url, waiters, "UPDATE hot SET n = n + 1 WHERE id = 1")
}

// holdRow runs update in an open transaction of one session, then the same
// update in waiters other sessions, which queue behind it; it returns once
// every waiter waits on a lock, with the holder's pid. The holder rolls
// back at cleanup and the waiters end.
func holdRow(tb testing.TB, url string, waiters int, update string, args ...any) int32 {
	tb.Helper()
	ctx := context.Background()
	holder := testdb.Connect(tb, url, "hot-holder")
	_, err := holder.Exec(ctx, "BEGIN")
	require.NoError(tb, err)
	_, err = holder.Exec(ctx, update, args...)
	require.NoError(tb, err)

	done := make(chan error, waiters)
	for range waiters {
		c := testdb.Connect(tb, url, "hot-waiter")
		go func() {
			_, err := c.Exec(ctx, update, args...)
			done <- err
		}()
	}
	// Cleanups run last-registered first: the waiters end before their
	// connections close.
	tb.Cleanup(func() {
		holder.Exec(context.Background(), "ROLLBACK")
		for range waiters {
			<-done
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		require.NoError(tb, holder.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		if n >= waiters {
			return int32(holder.PgConn().PID())
		}
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d waiters queued", n, waiters)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Three hundred sessions waiting on one row: the tree and the root finding
// still come back within the panel's default timeouts, with the holder as
// the only root counting every waiter.
func TestBlockingTreeHotRowScales(t *testing.T) {
	t.Parallel()
	const waiters = 300
	url, holder := hotRow(t, waiters)
	d := open(t, url, diagnostics.Config{})
	// pg_blocking_pids reads each waiter's lock at its own moment: a waiter
	// caught while the lock manager rearranges the queue (the deadlock
	// check every deadlock_timeout) can report no blocker for that instant
	// and show as a second root. That is the server's view, not a walk
	// error; read again, a few times, for a settled snapshot.
	var res diagnostics.Result[diagnostics.BlockingNode]
	for range 5 {
		res = d.BlockingTree(context.Background())
		require.NoError(t, res.Err, res.Status())
		if roots(res.Rows) == 1 {
			break
		}
	}
	require.Len(t, res.Rows, waiters+1)
	require.Equal(t, holder, res.Rows[0].PID)
	require.True(t, res.Rows[0].IsRoot)
	for _, n := range res.Rows[1:] {
		require.False(t, n.IsRoot, "pid %d (blocked by %v) is not a root", n.PID, n.BlockedBy)
	}
	require.Equal(t, waiters, res.Rows[0].BlockedCount)
}

// roots counts the roots of a tree.
func roots(rows []diagnostics.BlockingNode) int {
	n := 0
	for _, r := range rows {
		if r.IsRoot {
			n++
		}
	}
	return n
}

// BenchmarkBlockingTreeHotRow reads the blocking tree with 50, 300 and
// 1,000 sessions waiting on one row (a dedicated server each):
//
//	go test -run '^$' -bench BlockingTreeHotRow -benchtime 10x ./diagnostics/
func BenchmarkBlockingTreeHotRow(b *testing.B) {
	for _, waiters := range []int{50, 300, 1000} {
		b.Run(fmt.Sprint(waiters), func(b *testing.B) {
			url, _ := hotRow(b, waiters)
			d, err := diagnostics.Open(context.Background(), url, diagnostics.Config{StatementTimeout: time.Minute})
			require.NoError(b, err)
			defer d.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res := d.BlockingTree(context.Background())
				if res.Err != nil || len(res.Rows) != waiters+1 {
					b.Fatalf("tree: %v, %d rows", res.Err, len(res.Rows))
				}
			}
		})
	}
}
