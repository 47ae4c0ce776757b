package queues

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/metricsum"
	"github.com/pgconsole/console/internal/testdb"
)

// TestJobCompleteTx: the completion is fenced inside the caller's
// transaction by owner, generation and the lease itself, and lands only
// when that transaction commits.
func TestJobCompleteTx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)

	claim := func(queue string) Job {
		enqueueT(t, pool, EnqueueParams{Queue: queue, Kind: "k"})
		return claimOne(t, pool, queue, "w1", time.Minute)
	}
	status := func(id int64) string {
		j, err := JobGet(ctx, pool, id)
		require.NoError(t, err)
		return j.Status
	}

	t.Run("CommitsWithTheCallersWrites", func(t *testing.T) {
		j := claim("ct1")
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		require.NoError(t, JobCompleteTx(ctx, tx, &j))
		require.Equal(t, StatusRunning, status(j.ID), "done before the caller's commit")
		require.NoError(t, tx.Commit(ctx))
		require.Equal(t, StatusDone, status(j.ID))
	})
	t.Run("RolledBackWithTheCaller", func(t *testing.T) {
		j := claim("ct2")
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		require.NoError(t, JobCompleteTx(ctx, tx, &j))
		require.NoError(t, tx.Rollback(ctx))
		require.Equal(t, StatusRunning, status(j.ID))
	})
	t.Run("FencedByGeneration", func(t *testing.T) {
		j := claim("ct3")
		expireLease(t, pool, j.ID)
		_, err := JobReap(ctx, pool, 10, 20)
		require.NoError(t, err)
		again := claimOne(t, pool, "ct3", "w1", time.Minute)
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		require.ErrorIs(t, JobCompleteTx(ctx, tx, &j), ErrLeaseLost, "the reaped attempt completed the new one")
		require.NoError(t, tx.Rollback(ctx))
		require.Equal(t, StatusRunning, status(again.ID))
	})
	t.Run("FencedByAnExpiredLease", func(t *testing.T) {
		j := claim("ct4")
		expireLease(t, pool, j.ID) // not reaped yet: nobody else holds it
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		require.ErrorIs(t, JobCompleteTx(ctx, tx, &j), ErrLeaseLost, "completed after its lease ended")
	})
}

// TestCompletedInTransactionNotAckedAgain: a handler that completes its
// job in its own transaction is counted done once, and the engine writes
// no ack of its own (which the database would refuse: a stale ack).
func TestCompletedInTransactionNotAckedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := pool.Exec(ctx, `CREATE TABLE ledger (job_id bigint NOT NULL)`)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"ctx": {Concurrency: 2}})
	cfg.Registerer = reg
	startClient(t, pool, cfg, func(c *Client) {
		c.Handle("ledger", func(ctx context.Context, j *Job) error {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(context.Background())
			if _, err := tx.Exec(ctx, "INSERT INTO ledger VALUES ($1)", j.ID); err != nil {
				return err
			}
			if err := JobCompleteTx(ctx, tx, j); err != nil {
				return err
			}
			return tx.Commit(ctx)
		})
	})
	const n = 5
	for range n {
		enqueueT(t, pool, EnqueueParams{Queue: "ctx", Kind: "ledger"})
	}
	testdb.Eventually(t, 30*time.Second, "the jobs done", func() bool {
		return countJobs(t, pool, "status = 'done'") == n
	})
	testdb.Eventually(t, 10*time.Second, "the outcomes counted", func() bool {
		return finishedCount(t, reg, StatusDone) == n
	})
	require.Zero(t, finishedCount(t, reg, "ack_failed"))
	require.Zero(t, finishedCount(t, reg, "lease_lost"))
	require.Zero(t, testutil.ToFloat64(testutilCounter(reg, "queues_stale_acks_total")), "the engine acked a job its handler had completed")
	var rows int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM ledger").Scan(&rows))
	require.Equal(t, n, rows)
}

// TestSucceededButAckRefused: a handler that succeeded after its lease
// was taken from it (here reaped while it ran; the job then runs again) is
// counted as ack_failed, a
// job that ran but whose completion was not written, and as a stale ack;
// not as lease_lost, which says a handler's result was discarded.
func TestSucceededButAckRefused(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"refused": {Concurrency: 1}})
	cfg.Registerer = reg
	cfg.LeaseDuration = time.Minute // no renewal during the handler
	startClient(t, pool, cfg, func(c *Client) {
		c.Handle("taken", func(ctx context.Context, j *Job) error {
			if j.Attempts > 1 {
				return nil
			}
			if _, err := pool.Exec(ctx, "UPDATE jobs SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $1", j.ID); err != nil {
				return err
			}
			if _, err := JobReap(ctx, pool, 10, 20); err != nil {
				return err
			}
			// The engine's own reaper may have been first, or be reaping
			// it now (its row lock made this reap skip the job): either
			// way the lease is taken when the generation has moved on.
			// FOR UPDATE waits for a reap in flight to commit.
			var generation int64
			if err := pool.QueryRow(ctx, "SELECT lease_generation FROM jobs WHERE id = $1 FOR UPDATE", j.ID).Scan(&generation); err != nil {
				return err
			}
			if generation == j.LeaseGeneration {
				return Permanent(errors.New("the test could not reap its own job"))
			}
			return nil
		})
	})
	enqueueT(t, pool, EnqueueParams{Queue: "refused", Kind: "taken", MaxAttempts: 3})
	// The slot is free once a handler returns, so the second attempt may
	// be done before the first's refused ack is counted.
	testdb.Eventually(t, 30*time.Second, "the second attempt done and the first's ack counted", func() bool {
		return finishedCount(t, reg, StatusDone) == 1 && finishedCount(t, reg, "ack_failed") == 1
	})
	require.Zero(t, finishedCount(t, reg, "lease_lost"))
	require.Equal(t, 1.0, testutil.ToFloat64(testutilCounter(reg, "queues_stale_acks_total")))
}

// TestHeartbeatLostLeaseThenSucceeded: a handler the heartbeat cancels
// because its lease was taken (here the job was cancelled by an operator)
// but that returns nil all the same ran to the end: it is counted as one
// whose ack was refused (ack_failed, a stale ack), as when the ack is the
// first to find the lease gone, never as lease_lost (a discarded result).
func TestHeartbeatLostLeaseThenSucceeded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"taken": {Concurrency: 1}})
	cfg.Registerer = reg
	started := make(chan struct{}, 1)
	startClient(t, pool, cfg, func(c *Client) {
		c.Handle("finish", func(ctx context.Context, j *Job) error {
			started <- struct{}{}
			<-ctx.Done() // the heartbeat finds the lease gone
			return nil
		})
	})
	j := enqueueT(t, pool, EnqueueParams{Queue: "taken", Kind: "finish"})
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not start")
	}
	_, err := JobCancelTx(ctx, pool, j.ID)
	require.NoError(t, err)
	testdb.Eventually(t, 10*time.Second, "the attempt counted", func() bool {
		return finishedCount(t, reg, "ack_failed")+finishedCount(t, reg, "lease_lost") > 0
	})
	require.Equal(t, 1.0, finishedCount(t, reg, "ack_failed"), "the handler ran to the end: its ack was refused")
	require.Zero(t, finishedCount(t, reg, "lease_lost"), "nothing was discarded")
	require.Equal(t, 1.0, testutil.ToFloat64(testutilCounter(reg, "queues_stale_acks_total")))
	lost, err := metricsum.Counter(reg, "queues_lease_lost_total", "reason", "renew_refused")
	require.NoError(t, err)
	require.Equal(t, 1.0, lost, "the heartbeat found it")
}
