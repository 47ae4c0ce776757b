package bench

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// TestBurnClockStopsAtCommittedAcks: the burn-down's clock (awaitAcked)
// stops once the Client has had as many acks committed as asked, and by
// then the database holds them done; failed attempts are not acks. The
// untimed check (checkBurnt) refuses a queue that still has a job to work.
func TestBurnClockStopsAtCommittedAcks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	cfg := Config{Pool: pool, Workers: 10, Batch: 10}.withDefaults()
	queue := queueName("acked")
	for _, kind := range []string{"ok", "ok", "ok", "bad", "bad"} {
		_, err := queues.EnqueueTx(ctx, pool, queues.EnqueueParams{Queue: queue, Kind: kind, MaxAttempts: 1})
		require.NoError(t, err)
	}
	reg := prometheus.NewRegistry()
	c, err := newClient(cfg, queue, reg)
	require.NoError(t, err)
	var handled atomic.Int64
	c.Handle("ok", func(context.Context, *queues.Job) error { handled.Add(1); return nil })
	c.Handle("bad", func(context.Context, *queues.Job) error { handled.Add(1); return errors.New("boom") })
	require.NoError(t, c.Start(ctx))
	defer stopClient(c)

	require.NoError(t, awaitAcked(ctx, reg, 3, &handled))
	var done int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE queue = $1 AND status = 'done'`, queue).Scan(&done))
	require.Equal(t, 3, done, "the clock stopped before every ack it counted was committed")

	stopClient(c) // every outcome written
	acked, err := ackedJobs(reg)
	require.NoError(t, err)
	require.Equal(t, 3, acked, "only acks count, not the two dead letters")
	require.NoError(t, checkBurnt(ctx, cfg, queue, 3))

	_, err = queues.EnqueueTx(ctx, pool, queues.EnqueueParams{Queue: queue, Kind: "ok"})
	require.NoError(t, err)
	require.ErrorContains(t, checkBurnt(ctx, cfg, queue, 3), "the database holds 1 of the queue's jobs ready or running")
}
