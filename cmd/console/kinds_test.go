package main

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// The demo kinds do what the demo and drills rely on; the sql kind runs
// its statement in the job's session, and only when allowed.
func TestDemoKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, allowSQL := range []bool{false, true} {
		pool := testdb.New(t)
		c, err := queues.NewClient(pool, queues.ClientConfig{
			Queues:       map[string]queues.QueueConfig{"demo": {Concurrency: 4, Timeout: 300 * time.Millisecond}},
			PollInterval: 50 * time.Millisecond, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond,
		})
		require.NoError(t, err)
		registerDemoKinds(c, allowSQL)
		enq := func(kind string, payload any, maxAttempts int) int64 {
			j, err := queues.EnqueueTx(ctx, pool, queues.EnqueueParams{Queue: "demo", Kind: kind, Payload: payload, MaxAttempts: maxAttempts})
			require.NoError(t, err)
			return j.ID
		}
		noop := enq("noop", nil, 1)
		flaky := enq("fail", map[string]int{"times": 2}, 5)
		always := enq("fail", map[string]int{"times": -1}, 2)
		panics := enq("panic", nil, 1)
		slow := enq("sleep", map[string]int{"ms": 60_000}, 1)
		badPayload := enq("sleep", "not an object", 5)
		stmt := enq("sql", map[string]string{"statement": "CREATE TABLE demo_sql_ran (id int)"}, 1)
		require.NoError(t, c.Start(ctx))

		deadline := time.Now().Add(20 * time.Second)
		for {
			var open int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status IN ('ready', 'running')").Scan(&open))
			if open == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "%d demo jobs still open after 20s", open)
			time.Sleep(20 * time.Millisecond)
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		require.NoError(t, c.Stop(sctx))
		cancel()

		get := func(id int64) *queues.Job {
			j, err := queues.JobGet(ctx, pool, id)
			require.NoError(t, err)
			return j
		}
		require.Equal(t, queues.StatusDone, get(noop).Status)
		j := get(flaky)
		require.Equal(t, queues.StatusDone, j.Status)
		require.Equal(t, 3, j.Attempts)
		j = get(always)
		require.Equal(t, queues.StatusDead, j.Status)
		require.Equal(t, "attempt ? of job ?: demo fail kind", *j.ErrorClass)
		j = get(panics)
		require.Equal(t, "panic", *j.ErrorClass)
		require.Contains(t, *j.LastError, "demo panic kind")
		require.Equal(t, "timeout", *get(slow).ErrorClass)
		j = get(badPayload)
		require.Equal(t, queues.StatusDead, j.Status)
		require.Equal(t, 1, j.Attempts, "a payload that cannot decode is not retried")

		var ran bool
		require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass('demo_sql_ran') IS NOT NULL").Scan(&ran))
		if allowSQL {
			require.Equal(t, queues.StatusDone, get(stmt).Status)
			require.True(t, ran, "the sql kind did not run its statement")
		} else {
			j = get(stmt)
			require.Equal(t, queues.StatusDead, j.Status)
			require.Contains(t, *j.LastError, "no handler")
			require.False(t, ran, "the sql kind ran without allowSQL")
		}
	}
}

// TestDemoSleepOutOfRange: a sleep whose milliseconds overflow a duration
// is refused as permanent instead of wrapping to a sleep that ends at once.
func TestDemoSleepOutOfRange(t *testing.T) {
	t.Parallel()
	for _, ms := range []int64{9223372036854775807, maxSleepMS + 1, -1} {
		j := &queues.Job{Kind: "sleep", Payload: []byte(`{"ms": ` + strconv.FormatInt(ms, 10) + `}`)}
		err := demoSleep(context.Background(), j)
		require.Error(t, err, "ms %d", ms)
		require.True(t, queues.IsPermanent(err), "ms %d: %v", ms, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	j := &queues.Job{Kind: "sleep", Payload: []byte(`{"ms": ` + strconv.FormatInt(maxSleepMS, 10) + `}`)}
	require.ErrorIs(t, demoSleep(ctx, j), context.Canceled, "the longest sleep is a real sleep")
}

// TestDemoSQLBoundByLease: the sql kind commits its statement with the
// job's completion, and its statement ends on the server before the lease
// does: a statement longer than the lease fails on statement_timeout
// instead of running on after its lease.
func TestDemoSQLBoundByLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := pool.Exec(ctx, "CREATE TABLE sql_ledger (n int)")
	require.NoError(t, err)
	c, err := queues.NewClient(pool, queues.ClientConfig{
		Queues:        map[string]queues.QueueConfig{"demo": {Concurrency: 2}},
		LeaseDuration: 2 * time.Second, PollInterval: 50 * time.Millisecond,
	})
	require.NoError(t, err)
	registerDemoKinds(c, true)
	enq := func(statement string) int64 {
		j, err := queues.EnqueueTx(ctx, pool, queues.EnqueueParams{Queue: "demo", Kind: "sql",
			Payload: map[string]string{"statement": statement}, MaxAttempts: 1})
		require.NoError(t, err)
		return j.ID
	}
	insert := enq("INSERT INTO sql_ledger VALUES (1)")
	long := enq("SELECT pg_sleep(60) /* longer than the lease */")
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = c.Stop(sctx)
	})

	testdb.Eventually(t, 20*time.Second, "both sql jobs finished", func() bool {
		var open int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status IN ('ready', 'running')").Scan(&open))
		return open == 0
	})
	j, err := queues.JobGet(ctx, pool, insert)
	require.NoError(t, err)
	require.Equal(t, queues.StatusDone, j.Status)
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM sql_ledger").Scan(&n))
	require.Equal(t, 1, n)

	j, err = queues.JobGet(ctx, pool, long)
	require.NoError(t, err)
	require.Equal(t, queues.StatusDead, j.Status)
	require.NotNil(t, j.LastError)
	require.Contains(t, *j.LastError, "statement timeout", "the long statement ended by its lease's statement_timeout")
}
