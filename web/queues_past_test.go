package web

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// A queue recorded by the flight recorder reads, in the past view, as the
// live page read it at that moment: 130 ready of which 100 due is "130 ·
// 100 due" live and in history alike.
func TestRecordedQueueReadsAsTheLiveOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	for _, q := range []string{
		`INSERT INTO jobs (queue, kind) SELECT 'mixed', 'k' FROM generate_series(1, 100)`,
		`INSERT INTO jobs (queue, kind, available_at) SELECT 'mixed', 'k', now() + interval '1 hour' FROM generate_series(1, 30)`,
		`INSERT INTO jobs (queue, kind, status, lease_owner, lease_until, lease_generation) SELECT 'mixed', 'k', 'running', 'w', now() + interval '1 hour', 1 FROM generate_series(1, 3)`,
		`INSERT INTO jobs (queue, kind, status, error_class, finished_at) SELECT 'mixed', 'k', 'dead', 'x', now() FROM generate_series(1, 2)`,
	} {
		_, err := pool.Exec(ctx, q)
		require.NoError(t, err)
	}
	live, err := queues.QueueStats(ctx, pool)
	require.NoError(t, err)
	recorded, err := diagnostics.QueueHealth(ctx, pool, diagnostics.QueueParams{})
	require.NoError(t, err)
	require.Len(t, live, 1)
	require.Len(t, recorded, 1)
	require.Equal(t, int64(130), live[0].Ready)
	require.Equal(t, int64(100), live[0].Due)

	past := recordedQueue(recorded[0])
	want := live[0]
	want.DoneApprox = 0                                     // not recorded
	past.OldestReadySeconds, want.OldestReadySeconds = 0, 0 // read a moment apart
	require.Equal(t, want, past)
}

// The outbox as recorded reads, in the past view, as the live page read it.
func TestRecordedOutboxReadsAsTheLiveOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	for _, q := range []string{
		`INSERT INTO outbox_events (topic, event_type, payload) SELECT 't', 'e', '{}' FROM generate_series(1, 10)`,
		`INSERT INTO outbox_events (topic, event_type, payload, available_at) SELECT 't', 'e', '{}', now() + interval '1 hour' FROM generate_series(1, 4)`,
		`INSERT INTO outbox_events (topic, event_type, payload, state, lease_owner, lease_until, lease_generation) SELECT 't', 'e', '{}', 'inflight', 'r', now() + interval '1 hour', 1 FROM generate_series(1, 2)`,
		`INSERT INTO outbox_events (topic, event_type, payload, state, last_error) SELECT 't', 'e', '{}', 'dead', 'x' FROM generate_series(1, 3)`,
	} {
		_, err := pool.Exec(ctx, q)
		require.NoError(t, err)
	}
	live, err := queues.OutboxStats(ctx, pool)
	require.NoError(t, err)
	recorded, err := diagnostics.OutboxHealth(ctx, pool, 0)
	require.NoError(t, err)
	past := recordedOutbox(recorded)
	want := live
	want.RowsEstimate, want.AcceptedUnmarked = 0, 0 // not recorded
	past.OldestPendingSeconds, want.OldestPendingSeconds = 0, 0
	require.Equal(t, want, past)
}
