package queues

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// A relay whose lease expired and was reclaimed by another relay cannot mark
// (or reschedule) the event: its generation is stale.
func TestRelayStaleMarkIsFenced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	nop := PublisherFunc(func(context.Context, *OutboxMessage) error { return nil })
	a, err := NewRelay(pool, RelayConfig{Publisher: nop, ID: "relay-a"})
	require.NoError(t, err)
	b, err := NewRelay(pool, RelayConfig{Publisher: nop, ID: "relay-b"})
	require.NoError(t, err)
	ids := obEnqueue(t, pool, "orders", 1)

	claim := func(r *Relay) []*OutboxMessage {
		rows, err := pool.Query(ctx, sqlText("outbox_claim"), 10, r.ID(), 60000)
		require.NoError(t, err)
		ms, err := pgx.CollectRows(rows, pgx.RowToAddrOfStructByName[OutboxMessage])
		require.NoError(t, err)
		return ms
	}
	byA := claim(a)
	require.Len(t, byA, 1)
	// A stalls past its lease; the lease is reclaimed and B claims.
	_, err = pool.Exec(ctx, "UPDATE outbox_events SET lease_until = clock_timestamp() - interval '1 second' WHERE id = $1", ids[0])
	require.NoError(t, err)
	b.reclaimExpired(ctx)
	byB := claim(b)
	require.Len(t, byB, 1)
	require.Greater(t, byB[0].Generation, byA[0].Generation)

	// Nor renew its lease: it starts no more publishes of the batch.
	_, err = a.leaseFor(ctx, byA, time.Now())
	require.ErrorIs(t, err, errLeaseLost)
	ev, err := OutboxEventGet(ctx, pool, ids[0])
	require.NoError(t, err)
	bLease := *ev.LeaseUntil

	n, err := a.markPublished(ctx, byA)
	require.NoError(t, err)
	require.Zero(t, n, "stale relay marked an event it no longer owns")
	require.NoError(t, a.reschedule(ctx, byA, []error{context.DeadlineExceeded}, byA))
	ev, err = OutboxEventGet(ctx, pool, ids[0])
	require.NoError(t, err)
	require.Equal(t, OutboxInflight, ev.State)
	require.Equal(t, "relay-b", *ev.LeaseOwner)
	require.Equal(t, bLease, *ev.LeaseUntil, "the stale relay moved the new owner's lease")

	// The owner renews when too little of its lease is left.
	until, err := b.leaseFor(ctx, byB, time.Now())
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(b.cfg.LeaseDuration), until, b.cfg.LeaseDuration/2)
	ev, err = OutboxEventGet(ctx, pool, ids[0])
	require.NoError(t, err)
	require.False(t, ev.LeaseUntil.Before(until), "the lease in the database ends before the relay believes")

	n, err = b.markPublished(ctx, byB)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	ev, err = OutboxEventGet(ctx, pool, ids[0])
	require.NoError(t, err)
	require.Equal(t, OutboxPublished, ev.State)
	require.Equal(t, 2, ev.Attempts)
}

// Stop gives back the claimed events it never started to publish, with
// their attempt refunded, instead of leaving them to a lease expiry.
func TestRelayStopReleasesUnstarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	rps := 2.0
	_, err := RelaySettingsSetTx(ctx, pool, RelaySettings{RatePerSecond: &rps})
	require.NoError(t, err)
	published := make(chan int64, 100)
	pub := PublisherFunc(func(_ context.Context, m *OutboxMessage) error { published <- m.ID; return nil })
	r, err := NewRelay(pool, RelayConfig{Publisher: pub, BatchSize: 10, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	obEnqueue(t, pool, "orders", 10)
	select {
	case <-published:
	case <-time.After(20 * time.Second):
		t.Fatal("nothing published")
	}
	r.Stop()
	var inflight, pendingFresh int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'inflight'),
		count(*) FILTER (WHERE state = 'pending' AND attempts = 0) FROM outbox_events`).Scan(&inflight, &pendingFresh))
	require.Zero(t, inflight)
	require.Equal(t, 10-len(published)-1, pendingFresh)
	require.Positive(t, pendingFresh)
}
