package queues

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// An ack that cannot finish within the outcome deadline (another session
// holds the job's row) is still an ended attempt: counted in
// queues_jobs_finished_total as ack_failed, never as done, and the job is
// left running for its lease to expire.
func TestAckTimeoutCountedAsFinished(t *testing.T) {
	testdb.SkipShort(t, "an ack that waits out its five-second deadline")
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"acktimeout": {Concurrency: 1}})
	cfg.Registerer = reg
	started := make(chan int64, 1)
	finish := make(chan struct{})
	c := startClient(t, pool, cfg, func(c *Client) {
		c.Handle("held", func(_ context.Context, j *Job) error {
			started <- j.ID
			<-finish
			return nil
		})
	})
	j, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "acktimeout", Kind: "held"})
	require.NoError(t, err)
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the job never started")
	}
	lock, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer lock.Rollback(ctx)
	_, err = lock.Exec(ctx, "SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE", j.ID)
	require.NoError(t, err)
	close(finish)

	finished := c.metrics.finished
	testdb.Eventually(t, time.Minute, "the timed-out ack counted", func() bool {
		return testutil.ToFloat64(finished.WithLabelValues("acktimeout", "ack_failed")) == 1
	})
	require.Zero(t, testutil.ToFloat64(finished.WithLabelValues("acktimeout", "done")))
	// The abandoned ack is cancelled on the server, not left waiting for
	// the row: a statement still waiting would commit the moment the lock
	// goes, and the job would be done after all. The cancel request travels
	// on a connection of its own, so wait for it before letting go.
	testdb.Eventually(t, 30*time.Second, "the abandoned ack no longer waits for the row", func() bool {
		var waiting int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting))
		return waiting == 0
	})
	require.NoError(t, lock.Rollback(ctx))
	got, err := JobGet(ctx, pool, j.ID)
	require.NoError(t, err)
	require.Equal(t, StatusRunning, got.Status, "the ack went through after all")
}
