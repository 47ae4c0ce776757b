package episodes_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics/episodes"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/migrations"
)

// stormWaiters is the storm's size: sessions queued on one row.
const stormWaiters = 300

// TestRecorderCostInAStorm measures what the recorder asks of the database
// while 300 sessions wait on one row that one transaction holds, the storm
// an incident console is opened in: after the episode is first written, a
// look is one statement (the probe) while the same sessions keep waiting,
// and the server's time per second of recording is logged for the record.
//
//	go test -count=1 -v -run TestRecorderCostInAStorm ./diagnostics/episodes/
func TestRecorderCostInAStorm(t *testing.T) {
	testdb.SkipShort(t, "300 sessions waiting on one row for 40 s")
	ctx := context.Background()
	settings := maps.Clone(testdb.ServerSettings)
	settings["max_connections"] = fmt.Sprint(stormWaiters + 40)
	srv := testdb.NewServer(t, settings)
	url := srv.URL("postgres")
	setup := testdb.Connect(t, url, "storm-setup")
	_, err := migrations.Up(ctx, setup)
	require.NoError(t, err)
	_, err = setup.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
		CREATE TABLE hot (id int PRIMARY KEY, n int NOT NULL); INSERT INTO hot VALUES (1, 0)`)
	require.NoError(t, err)

	holder := testdb.Connect(t, url, "storm-holder")
	_, err = holder.Exec(ctx, "BEGIN; UPDATE hot SET n = n + 1 WHERE id = 1")
	require.NoError(t, err)
	done := make(chan error, stormWaiters)
	for range stormWaiters {
		c := testdb.Connect(t, url, "storm-waiter")
		go func() {
			_, err := c.Exec(ctx, "UPDATE hot SET n = n + 1 WHERE id = 1")
			done <- err
		}()
	}
	t.Cleanup(func() {
		holder.Exec(context.Background(), "ROLLBACK")
		for range stormWaiters {
			<-done
		}
	})
	testdb.Eventually(t, 2*time.Minute, "every waiter queued", func() bool {
		return testdb.Count(t, setup, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`) >= stormWaiters
	})

	rec, err := episodes.New(episodes.Config{URL: url, Interval: time.Second, Name: "storm"})
	require.NoError(t, err)
	require.NoError(t, rec.Start(ctx))
	t.Cleanup(rec.Stop)
	testdb.Eventually(t, time.Minute, "the storm is recorded as one episode", func() bool {
		return testdb.Count(t, setup, "SELECT count(*) FROM lock_episodes WHERE peak_waiting >= $1", stormWaiters) == 1
	})

	type cost struct {
		calls int
		ms    float64
	}
	// stats reads the statements run on the storm's own server, by the
	// name their header gives them (PostgreSQL 18 keeps the text from the
	// statement on, without the header: the text's start, then). Only the
	// recorder runs statements there while the storm lasts, besides this
	// one.
	stats := func() map[string]cost {
		rows, err := setup.Query(ctx, `SELECT coalesce(substring(query FROM '-- (Episode\w+)'), left(query, 40)), sum(calls)::int, sum(total_exec_time)
			FROM pg_stat_statements
			WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%UPDATE hot%'
			GROUP BY 1`)
		require.NoError(t, err)
		out := map[string]cost{}
		for rows.Next() {
			var name string
			var c cost
			require.NoError(t, rows.Scan(&name, &c.calls, &c.ms))
			out[name] = c
		}
		require.NoError(t, rows.Err())
		return out
	}
	before, spentBefore := stats(), rec.Cost()
	const window = 40 * time.Second
	time.Sleep(window) // the measured stretch of looks in the storm
	after, spentAfter := stats(), rec.Cost()

	var calls int
	var ms float64
	for name, c := range after {
		c.calls -= before[name].calls
		c.ms -= before[name].ms
		calls += c.calls
		ms += c.ms
		if c.calls == 0 {
			continue
		}
		t.Logf("  %-26s %4d calls in the window, %8.1f ms; since the start %4d calls, %.2f ms each",
			name, c.calls, c.ms, after[name].calls, after[name].ms/float64(max(after[name].calls, 1)))
	}
	looks := window.Seconds()
	t.Logf("in a storm of %d waiters: %d statements in %s (%.2f a look), %.2f ms/s of server time, %.2f ms/s with round trips (Recorder.Cost)",
		stormWaiters, calls, window, float64(calls)/looks, ms/window.Seconds(), (spentAfter.Seconds-spentBefore.Seconds)*1000/window.Seconds())
	require.NotZero(t, calls, "the recorder's statements are in pg_stat_statements")
	require.LessOrEqual(t, float64(calls)/looks, 1.2, "while the same sessions wait, a look is one statement")
}
