package episodes

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// The probe a look runs while nothing waits counts every kind of
// heavyweight lock wait of this database, as the ungranted requests of
// pg_locks do: a relation lock, a row lock (a wait on the holder's
// transaction) and an advisory lock.
func TestProbesSeeTheSameWaits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	setup := testdb.Connect(t, url, "setup")
	_, err := setup.Exec(ctx, "CREATE TABLE probe_rel (id int); CREATE TABLE probe_row (id int PRIMARY KEY); INSERT INTO probe_row VALUES (1)")
	require.NoError(t, err)
	pool := testdb.Pool(t, url)
	digests := map[int64]bool{}
	probe := func(name string) int {
		var n int
		var digest int64
		require.NoError(t, pool.QueryRow(ctx, sqlText(name)).Scan(&n, &digest))
		if name == "episode_probe" {
			var again int64
			require.NoError(t, pool.QueryRow(ctx, sqlText(name)).Scan(&n, &again))
			require.Equal(t, digest, again, "the same waits, the same digest")
			require.Equal(t, n == 0, digest == 0, "digest 0 means no wait")
			require.False(t, digests[digest] && n > 0, "a new wait changes the digest")
			digests[digest] = true
		}
		return n
	}
	require.Zero(t, probe("episode_probe"), "nothing waits yet")

	holder := testdb.Connect(t, url, "probe-holder")
	_, err = holder.Exec(ctx, "BEGIN; LOCK TABLE probe_rel IN SHARE MODE; SELECT * FROM probe_row WHERE id = 1 FOR UPDATE; SELECT pg_advisory_xact_lock(4242)")
	require.NoError(t, err)
	waits := []struct{ app, sql string }{
		{"probe-relation", "LOCK TABLE probe_rel IN EXCLUSIVE MODE"},
		{"probe-row", "UPDATE probe_row SET id = 1 WHERE id = 1"},
		{"probe-advisory", "SELECT pg_advisory_xact_lock(4242)"},
	}
	done := make(chan error, len(waits))
	for i, w := range waits {
		c := testdb.Connect(t, url, w.app)
		go func() {
			_, err := c.Exec(ctx, "BEGIN; "+w.sql+"; COMMIT")
			done <- err
		}()
		testdb.WaitBackend(t, pool, w.app, "wait_event_type = 'Lock'")
		require.Equal(t, i+1, probe("episode_probe"), "after the %s wait", w.app)
		require.GreaterOrEqual(t, probe("episode_probe_locks"), i+1, "pg_locks sees the %s wait too", w.app)
	}
	_, err = holder.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	for range waits {
		require.NoError(t, <-done)
	}
	require.Zero(t, probe("episode_probe"), "every wait ended")
}

// A root that ends its transaction while its waiter goes on waiting behind
// another changes the probe's digest: the recorder reads who waits on whom
// again at once instead of keeping the root that left.
func TestProbeDigestSeesARootLeave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	setup := testdb.Connect(t, url, "setup")
	_, err := setup.Exec(ctx, "CREATE TABLE probe_shared (id int)")
	require.NoError(t, err)
	pool := testdb.Pool(t, url)
	digest := func() int64 {
		var n int
		var d int64
		require.NoError(t, pool.QueryRow(ctx, sqlText("episode_probe")).Scan(&n, &d))
		require.Equal(t, 1, n, "one session waits")
		return d
	}
	first := testdb.Connect(t, url, "probe-root-a")
	second := testdb.Connect(t, url, "probe-root-b")
	for _, c := range []interface {
		Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	}{first, second} {
		_, err := c.Exec(ctx, "BEGIN; LOCK TABLE probe_shared IN SHARE MODE")
		require.NoError(t, err)
	}
	waiter := testdb.Connect(t, url, "probe-waiter")
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "BEGIN; LOCK TABLE probe_shared IN EXCLUSIVE MODE; COMMIT")
		done <- err
	}()
	testdb.WaitBackend(t, pool, "probe-waiter", "wait_event_type = 'Lock'")
	behindBoth := digest()
	require.Equal(t, behindBoth, digest(), "nothing changed, the same digest")
	_, err = first.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	require.NotEqual(t, behindBoth, digest(), "one of its roots left: the waiter waits behind the other alone")
	_, err = second.Exec(ctx, "COMMIT")
	require.NoError(t, err)
	require.NoError(t, <-done)
}

// BenchmarkProbe times the look of a recorder while nothing waits, on a
// server where one transaction holds locks on 200 tables: the probe on
// pg_stat_activity against the one on pg_locks, whose cost grows with the
// locks held.
//
//	go test -run '^$' -bench BenchmarkProbe ./diagnostics/episodes/
func BenchmarkProbe(b *testing.B) {
	ctx := context.Background()
	url := testdb.URL(b)
	setup := testdb.Connect(b, url, "setup")
	_, err := setup.Exec(ctx, "DO $$BEGIN FOR i IN 1..200 LOOP EXECUTE format('CREATE TABLE bench_t%s (id int)', i); END LOOP; END$$")
	require.NoError(b, err)
	holder := testdb.Connect(b, url, "bench-holder")
	_, err = holder.Exec(ctx, "BEGIN; DO $$BEGIN FOR i IN 1..200 LOOP EXECUTE format('LOCK TABLE bench_t%s IN ACCESS SHARE MODE', i); END LOOP; END$$")
	require.NoError(b, err)
	_, err = setup.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
	require.NoError(b, err)
	conn := testdb.Connect(b, url, ApplicationName)
	for _, name := range []string{"episode_probe", "episode_probe_locks"} {
		b.Run(name, func(b *testing.B) {
			_, err := conn.Exec(ctx, "SELECT pg_stat_statements_reset()")
			require.NoError(b, err)
			var n int
			var digest int64
			for b.Loop() {
				if err := conn.QueryRow(ctx, sqlText(name)).Scan(&n, &digest); err != nil {
					b.Fatal(fmt.Errorf("%s: %w", name, err))
				}
			}
			// The server's time, without the round trip and the client.
			var ms float64
			require.NoError(b, conn.QueryRow(ctx, `SELECT coalesce(max(mean_exec_time), 0) FROM pg_stat_statements
				WHERE query LIKE '%waiting%' AND query NOT LIKE '%pg_stat_statements%'`).Scan(&ms))
			b.ReportMetric(ms, "server-ms/op")
		})
	}
}
