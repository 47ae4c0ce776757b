package diagnostics_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	settings := maps.Clone(testdb.ServerSettings)
	settings["max_connections"] = fmt.Sprint(waiters + 50)
	srv := testdb.NewServer(tb, settings)
	url := srv.URL("postgres")
	ctx := context.Background()
	holder, err := pgx.Connect(ctx, url)
	require.NoError(tb, err)
	tb.Cleanup(func() { holder.Close(context.Background()) })
	_, err = holder.Exec(ctx, "CREATE TABLE hot (id int PRIMARY KEY, n int); INSERT INTO hot VALUES (1, 0)")
	require.NoError(tb, err)
	_, err = holder.Exec(ctx, "BEGIN; UPDATE hot SET n = n + 1 WHERE id = 1")
	require.NoError(tb, err)

	done := make(chan error, waiters)
	conns := make([]*pgx.Conn, 0, waiters)
	for i := 0; i < waiters; i++ {
		c, err := pgx.Connect(ctx, url)
		require.NoError(tb, err)
		conns = append(conns, c)
		go func() {
			_, err := c.Exec(ctx, "UPDATE hot SET n = n + 1 WHERE id = 1")
			done <- err
		}()
	}
	tb.Cleanup(func() {
		holder.Exec(context.Background(), "ROLLBACK")
		for range conns {
			<-done
		}
		for _, c := range conns {
			c.Close(context.Background())
		}
	})
	// Wait until every waiter is queued.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var n int
		require.NoError(tb, holder.QueryRow(ctx,
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").Scan(&n))
		if n >= waiters {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("only %d of %d waiters queued", n, waiters)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return url, int32(holder.PgConn().PID())
}

// Three hundred sessions waiting on one row: the tree and the root finding
// still come back within the panel's default timeouts, with the holder as
// the only root counting every waiter.
func TestBlockingTreeHotRowScales(t *testing.T) {
	t.Parallel()
	const waiters = 300
	url, holder := hotRow(t, waiters)
	d := open(t, url, diagnostics.Config{})
	res := d.BlockingTree(context.Background())
	require.NoError(t, res.Err, res.Status())
	require.Len(t, res.Rows, waiters+1)
	require.Equal(t, holder, res.Rows[0].PID)
	require.True(t, res.Rows[0].IsRoot)
	require.Equal(t, waiters, res.Rows[0].BlockedCount)
	for _, n := range res.Rows[1:] {
		require.False(t, n.IsRoot, "pid %d is not a root", n.PID)
	}
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
