package actions_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/actions"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// TestThrottleUnderLoad runs two worker processes (two queues.Clients with
// their own pools) on a queue limited to 8, throttles it to 2 through the
// action, and watches the measured in-flight fall to at most 2.
func TestThrottleUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	pool := testdb.Pool(t, url)
	r := newRunner(t, pool, actions.RunnerConfig{})
	exec(t, pool, "INSERT INTO queue_settings (queue, max_workers) VALUES ('emails', 8)")
	exec(t, pool, `INSERT INTO jobs (queue, kind, payload)
		SELECT 'emails', 'sleep', '{"ms": 300}' FROM generate_series(1, 400)`)

	for i := range 2 {
		cfg, err := queues.PoolConfig(url)
		require.NoError(t, err)
		wpool := testdb.Pool(t, cfg.ConnString())
		c, err := queues.NewClient(wpool, queues.ClientConfig{
			ID:           fmt.Sprintf("worker-%d", i),
			Queues:       map[string]queues.QueueConfig{"emails": {Concurrency: 6}},
			PollInterval: 100 * time.Millisecond,
		})
		require.NoError(t, err)
		c.Handle("sleep", func(ctx context.Context, _ *queues.Job) error {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(300 * time.Millisecond):
				return nil
			}
		})
		require.NoError(t, c.Start(ctx))
		t.Cleanup(func() {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c.Stop(sctx)
		})
	}
	running := func() int64 {
		return queryInt(t, pool, "SELECT count(*) FROM jobs WHERE queue = 'emails' AND status = 'running'")
	}
	waitFor(t, "the fleet to run more than 2 jobs", func() bool { return running() > 2 })

	out, err := r.Run(ctx, operator, "queue.throttle", actions.Request{
		Params: map[string]any{"queue": "emails", "max_workers": 2}, Reason: reason})
	require.NoError(t, err)
	res := out.Result.(actions.QueueSettingsResult)
	require.Equal(t, 2, *res.Settings.MaxWorkers)
	require.Equal(t, 2, res.Fleet.LiveWorkers)
	pv := out.Preview.(actions.QueueSettingsPreview)
	require.Equal(t, 8, *pv.Before.MaxWorkers)

	// Running jobs finish (300 ms each); no new claim may exceed the limit.
	waitFor(t, "in-flight to fall to 2", func() bool { return running() <= 2 })
	for range 10 {
		require.LessOrEqual(t, running(), int64(2), "in-flight stays at most 2")
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, "the workers' measured in-flight to fall to 2", func() bool {
		return queryInt(t, pool, `SELECT coalesce(sum((in_flight_by_queue ->> 'emails')::int), 0) FROM workers
			WHERE stopped_at IS NULL`) <= 2
	})
	require.Greater(t, queryInt(t, pool, "SELECT count(*) FROM jobs WHERE queue = 'emails' AND status = 'ready'"), int64(0),
		"still under load")
}
