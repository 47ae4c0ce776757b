package queues

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestLedgerOncePerJobUnderPartition: handlers write a ledger row keyed by
// job id and complete their job in the same transaction (JobCompleteTx),
// on two workers, one of them behind a proxy that goes silent twice: once
// right after one of its handlers committed (its completion is then in the
// database but the worker hears nothing more: an ack written after the
// handler would be lost, and the job would run again), once between a
// handler's completion and its COMMIT (the transaction holds the job's row
// and no COMMIT arrives). Every job ends done with exactly one ledger row.
func TestLedgerOncePerJobUnderPartition(t *testing.T) {
	testdb.SkipShort(t, "a partition drill through a proxy (two workers, seconds of leases)")
	ctx := context.Background()
	dbURL := testdb.URL(t)
	direct := testdb.Pool(t, dbURL)
	_, err := direct.Exec(ctx, `CREATE TABLE ledger (job_id bigint NOT NULL, worker text NOT NULL)`)
	require.NoError(t, err)
	proxy := startPartitionProxy(t, serverAddr(t, dbURL))
	cut := testdb.Pool(t, throughProxy(t, dbURL, proxy.ln.Addr().String()))
	const lease = 3 * time.Second

	// armed is the point at which the next handler of the cut-off worker
	// to reach it pauses the proxy; paused tells the test.
	var mu sync.Mutex
	armed := ""
	paused := make(chan int64, 1)
	pauseAt := func(point string, id int64) {
		mu.Lock()
		defer mu.Unlock()
		if armed != point {
			return
		}
		armed = ""
		proxy.pause()
		paused <- id
	}
	ledger := func(pool *pgxpool.Pool, worker string, at func(string, int64)) HandlerFunc {
		return func(ctx context.Context, j *Job) error {
			if err := sleepCtx(ctx, time.Duration(50+j.ID%5*50)*time.Millisecond); err != nil {
				return err
			}
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() {
				rctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = tx.Rollback(rctx)
			}()
			if _, err := tx.Exec(ctx, "INSERT INTO ledger VALUES ($1, $2)", j.ID, worker); err != nil {
				return err
			}
			if err := JobCompleteTx(ctx, tx, j); err != nil {
				return err
			}
			at("before-commit", j.ID)
			if err := tx.Commit(ctx); err != nil {
				return err
			}
			at("after-commit", j.ID)
			return nil
		}
	}
	newWorker := func(pool *pgxpool.Pool, id string, concurrency int, at func(string, int64)) *Client {
		c, err := NewClient(pool, ClientConfig{ID: id, Queues: map[string]QueueConfig{"ledger": {Concurrency: concurrency}},
			LeaseDuration: lease, PollInterval: 100 * time.Millisecond})
		require.NoError(t, err)
		c.Handle("ledger", ledger(pool, id, at))
		require.NoError(t, c.Start(ctx))
		return c
	}
	a := newWorker(cut, "cut-off", 4, pauseAt)
	b := newWorker(direct, "healthy", 2, func(string, int64) {})
	t.Cleanup(func() {
		proxy.resume()
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
		_ = b.Stop(sctx)
	})

	total := 0
	for _, point := range []string{"after-commit", "before-commit"} {
		mu.Lock()
		armed = point
		mu.Unlock()
		const batch = 12
		for range batch {
			_, err := EnqueueTx(ctx, direct, EnqueueParams{Queue: "ledger", Kind: "ledger", MaxAttempts: 5})
			require.NoError(t, err)
		}
		total += batch
		select {
		case id := <-paused:
			t.Logf("%s: paused the cut-off worker at job %d", point, id)
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no handler of the cut-off worker got there within 30s", point)
		}
		// Long enough for the leases of the cut-off worker to end and
		// the healthy worker to reap and run its jobs.
		time.Sleep(2*lease + time.Second)
		proxy.resume()
		waitDone(t, direct, total, 60*time.Second, point)
	}

	rows, err := direct.Query(ctx, `SELECT job_id, count(*), string_agg(worker, ',') FROM ledger GROUP BY job_id HAVING count(*) > 1`)
	require.NoError(t, err)
	var twice []string
	for rows.Next() {
		var id, n int64
		var workers string
		require.NoError(t, rows.Scan(&id, &n, &workers))
		twice = append(twice, fmt.Sprintf("job %d: %d rows (%s)", id, n, workers))
	}
	require.NoError(t, rows.Err())
	require.Empty(t, twice, "jobs whose effects landed more than once")
	var jobs, ledgered int
	require.NoError(t, direct.QueryRow(ctx, `SELECT count(*), count(DISTINCT l.job_id) FROM jobs j
		LEFT JOIN ledger l ON l.job_id = j.id WHERE j.status = 'done'`).Scan(&jobs, &ledgered))
	require.Equal(t, total, jobs)
	require.Equal(t, total, ledgered, "done jobs without their ledger row")
}

// waitDone waits until want jobs are done.
func waitDone(t *testing.T, db DBTX, want int, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var done int
		require.NoError(t, db.QueryRow(context.Background(), "SELECT count(*) FROM jobs WHERE status = 'done'").Scan(&done))
		if done == want {
			return
		}
		require.True(t, time.Now().Before(deadline), "%s: only %d of %d jobs done after %s", what, done, want, within)
		time.Sleep(50 * time.Millisecond)
	}
}
