package actions_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// jobChain runs a real worker whose `report` job (max attempts
// maxAttempts) takes row 1 of ledger in its own session and sleeps, and
// waiters `post` jobs whose sessions queue behind it for the same row. It
// returns the report job, the pid of its session and the waiting jobs.
func jobChain(t *testing.T, url string, pool *pgxpool.Pool, maxAttempts, waiters int) (int64, int32, []int64) {
	t.Helper()
	ctx := context.Background()
	exec(t, pool, "CREATE TABLE ledger (id int PRIMARY KEY, n int NOT NULL)")
	exec(t, pool, "INSERT INTO ledger VALUES (1, 0)")
	cfg, err := queues.PoolConfig(url)
	require.NoError(t, err)
	c, err := queues.NewClient(testdb.Pool(t, cfg.ConnString()), queues.ClientConfig{
		ID:             "worker-jobs",
		Queues:         map[string]queues.QueueConfig{"reports": {Concurrency: 1}, "ledger": {Concurrency: waiters}},
		PollInterval:   100 * time.Millisecond,
		RetryDelayFunc: func(int) time.Duration { return time.Hour }, // a retried report must not lock again
	})
	require.NoError(t, err)
	c.Handle("report", func(ctx context.Context, _ *queues.Job) error {
		conn, err := queues.JobConn(ctx)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, "BEGIN; UPDATE ledger SET n = n + 1 WHERE id = 1; SELECT pg_sleep(60); COMMIT")
		return err
	})
	c.Handle("post", func(ctx context.Context, _ *queues.Job) error {
		conn, err := queues.JobConn(ctx)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, "UPDATE ledger SET n = n + 1 WHERE id = 1")
		return err
	})
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() {
		// The report sleeps for a minute: cancel it rather than wait out the drain.
		pool.Exec(context.Background(), `SELECT pg_cancel_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name LIKE 'console-worker job=%'`)
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Stop(sctx)
	})
	root, err := c.Enqueue(ctx, queues.EnqueueParams{Queue: "reports", Kind: "report", MaxAttempts: maxAttempts})
	require.NoError(t, err)
	testdb.WaitBackend(t, pool, fmt.Sprintf("console-worker job=%d", root.ID), "datname = current_database() AND wait_event = 'PgSleep'")
	var waiting []int64
	for range waiters {
		j, err := c.Enqueue(ctx, queues.EnqueueParams{Queue: "ledger", Kind: "post"})
		require.NoError(t, err)
		testdb.WaitBackend(t, pool, fmt.Sprintf("console-worker job=%d", j.ID), "datname = current_database() AND wait_event_type = 'Lock'")
		waiting = append(waiting, j.ID)
	}
	var pid int32
	require.NoError(t, pool.QueryRow(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
		fmt.Sprintf("console-worker job=%d", root.ID)).Scan(&pid))
	return root.ID, pid, waiting
}

// Cancelling a job's session fails the job's attempt: its last one sends
// it dead, and the jobs queued behind its lock go on. The preview says so
// before, the result after, each naming the jobs.
func TestBackendCancelSaysWhatHappensToTheJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	r := newRunner(t, pool, actions.RunnerConfig{SettleTimeout: 10 * time.Second})
	root, pid, waiting := jobChain(t, url, pool, 1, 2)

	pv := previewCancel(t, r, pid)
	require.NotNil(t, pv.Job, "the target is a job's session")
	require.Equal(t, root, pv.Job.ID)
	require.Equal(t, fmt.Sprintf("job #%d (`report`, queue `reports`) fails this attempt and goes dead: attempt 1, max attempts 1", root), pv.Job.Fate)
	require.Equal(t, fmt.Sprintf("the 2 waiting jobs #%d, #%d go on once the lock is released", waiting[0], waiting[1]), pv.Waiters)
	require.Len(t, pv.WaitingJobs, 2)
	for i, j := range pv.WaitingJobs {
		require.Equal(t, waiting[i], j.ID)
		require.Equal(t, "post", j.Kind)
		require.Equal(t, "goes on once the lock is released", j.Fate)
	}

	out, err := r.Run(ctx, operator, "backend.cancel", actions.Request{Reason: reason, Params: map[string]any{"pid": pid}})
	require.NoError(t, err)
	require.Contains(t, out.Summary, pv.Job.Fate, "the sentence the operator confirms names the job's fate")
	res := out.Result.(actions.BackendResult)
	require.True(t, res.Cleared, res.Message)
	require.NotNil(t, res.Job)
	require.Equal(t, queues.StatusDead, res.Job.Status)
	require.Equal(t, fmt.Sprintf("job #%d (`report`, queue `reports`) went dead: attempt 1 of 1 failed", root), res.Job.Fate)
	require.Len(t, res.WaitingJobs, 2)
	for _, j := range res.WaitingJobs {
		require.Contains(t, j.Fate, "went on", "job %d", j.ID)
	}
	require.Equal(t, fmt.Sprintf("#%d, #%d went on", waiting[0], waiting[1]), res.Waiters)
	require.Contains(t, out.ResultSummary, res.Job.Fate)
}

// A job with attempts left is retried after the engine's backoff, and the
// preview says within how long.
func TestBackendPreviewSaysTheJobRetries(t *testing.T) {
	t.Parallel()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	r := newRunner(t, pool, actions.RunnerConfig{})
	root, pid, waiting := jobChain(t, url, pool, 3, 1)

	pv := previewCancel(t, r, pid)
	require.NotNil(t, pv.Job)
	require.Equal(t, fmt.Sprintf("job #%d (`report`, queue `reports`) fails attempt 1 of 3 and will retry within ~1s (the engine's default backoff)", root), pv.Job.Fate)
	require.Equal(t, fmt.Sprintf("the waiting job #%d goes on once the lock is released", waiting[0]), pv.Waiters)
}
