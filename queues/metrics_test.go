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

// TestEnqueueAndQueueWaitMetrics: jobs enqueued through the Client are
// counted per queue, and every claim records how long the job waited, on
// the database clock (a job available a minute ago waited about a minute).
func TestEnqueueAndQueueWaitMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"metered": {Concurrency: 2}})
	cfg.Registerer = reg
	c := startClient(t, pool, cfg, func(c *Client) { registerTestKinds(c) })

	_, err := c.Enqueue(ctx, EnqueueParams{Queue: "metered", Kind: "noop"})
	require.NoError(t, err)
	_, err = c.EnqueueMany(ctx, []EnqueueParams{{Queue: "metered", Kind: "noop"}, {Queue: "metered", Kind: "noop"}})
	require.NoError(t, err)
	// Available a minute ago: its wait is at least a minute.
	_, err = pool.Exec(ctx, "INSERT INTO jobs (queue, kind, available_at) VALUES ('metered', 'noop', clock_timestamp() - interval '1 minute')")
	require.NoError(t, err)

	testdb.Eventually(t, 20*time.Second, "all jobs done", func() bool {
		return countJobs(t, pool, "queue = 'metered' AND status = 'done'") == 4
	})
	require.Equal(t, 3.0, testutil.ToFloat64(testutilCounter(reg, "queues_jobs_enqueued_total")),
		"the row inserted with SQL was not enqueued through the Client")

	count, sum := histogramTotals(t, reg, "queues_job_queue_wait_seconds")
	require.EqualValues(t, 4, count, "one observation per claimed job")
	require.GreaterOrEqual(t, sum, 60.0, "the job available a minute ago waited a minute")
}

// TestRunAndAckDurationMetrics: every attempt records its handler's run
// time and, once its ack commits, the time from the handler's return to
// the ack. Jobs that sleep 500 ms each run at least that long; their acks
// take a round trip, more than nothing and far less than the run.
func TestRunAndAckDurationMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"timed": {Concurrency: 3}})
	cfg.Registerer = reg
	startClient(t, pool, cfg, func(c *Client) { registerTestKinds(c) })
	for range 3 {
		_, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "timed", Kind: "sleep", Payload: []byte(`{"ms": 500}`)})
		require.NoError(t, err)
	}
	testdb.Eventually(t, 20*time.Second, "all jobs done", func() bool {
		return countJobs(t, pool, "queue = 'timed' AND status = 'done'") == 3
	})
	// The ack's observation is made after its commit, which the done
	// rows above may precede by a moment.
	testdb.Eventually(t, 10*time.Second, "three acks observed", func() bool {
		n, _ := histogramTotals(t, reg, "queues_ack_duration_seconds")
		return n == 3
	})
	runs, run := histogramTotals(t, reg, "queues_job_run_duration_seconds")
	require.EqualValues(t, 3, runs, "one run time per attempt")
	require.GreaterOrEqual(t, run, 1.5, "three handlers of 500 ms each")
	_, ack := histogramTotals(t, reg, "queues_ack_duration_seconds")
	require.Greater(t, ack, 0.0, "an ack takes a round trip")
	require.Less(t, ack, run, "an ack is timed from the handler's return, not its start")
}

// histogramTotals is the observation count and sum of the histogram name
// over all its series in reg.
func histogramTotals(t *testing.T, reg *prometheus.Registry, name string) (count uint64, sum float64) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				count += m.GetHistogram().GetSampleCount()
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return count, sum
}
