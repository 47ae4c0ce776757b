package queues

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// The same event delivered 100 times over NATS to an inbox consumer with
// several concurrent handlers: one inbox row, one side effect.
func TestInboxSameEventDeliveredHundredTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := pool.Exec(ctx, `CREATE TABLE ob_coupons (event_id text NOT NULL, user_id text NOT NULL)`)
	require.NoError(t, err)
	ns := obStartNATS(t)
	nc := ns.connect(t)

	var handled, duplicates, applied atomic.Int64
	var failures []error
	var mu sync.Mutex
	msgs := make(chan *nats.Msg, 200)
	sub, err := nc.ChanSubscribe("coupons.issue", msgs)
	require.NoError(t, err)
	defer sub.Unsubscribe()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range msgs {
				eventID := m.Header.Get("Nats-Msg-Id")
				tx, err := pool.Begin(ctx)
				if err == nil {
					var dup bool
					dup, err = InboxProcessTx(ctx, tx, "coupon-service", eventID, func(tx pgx.Tx) error {
						applied.Add(1)
						_, err := tx.Exec(ctx, "INSERT INTO ob_coupons VALUES ($1, 'u-1')", eventID)
						return err
					})
					if err == nil {
						err = tx.Commit(ctx)
					} else {
						tx.Rollback(ctx)
					}
					if err == nil && dup {
						duplicates.Add(1)
					}
				}
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
				handled.Add(1)
			}
		}()
	}
	for range 100 {
		m := nats.NewMsg("coupons.issue")
		m.Header.Set("Nats-Msg-Id", "881002")
		m.Data = []byte(`{"campaign":"spring","user":"u-1"}`)
		require.NoError(t, nc.PublishMsg(m))
	}
	require.NoError(t, nc.Flush())
	testdb.Eventually(t, 20*time.Second, "100 deliveries handled", func() bool { return handled.Load() == 100 })
	close(msgs)
	wg.Wait()
	require.Empty(t, failures)
	require.Equal(t, int64(99), duplicates.Load())

	var inboxRows, coupons int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM consumer_inbox WHERE event_id = '881002'").Scan(&inboxRows))
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM ob_coupons").Scan(&coupons))
	require.Equal(t, 1, inboxRows)
	require.Equal(t, 1, coupons)
	// fn ran once per committed application; a concurrent duplicate waits
	// on the key and never runs fn.
	require.Equal(t, int64(1), applied.Load())

	entries, err := InboxLookup(ctx, pool, "881002")
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "coupon-service", entries[0].Consumer)
}

// A failed side effect rolls back the inbox record with it, so the
// redelivery applies the event.
func TestInboxFailedEffectIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	sp, err := tx.Begin(ctx)
	require.NoError(t, err)
	dup, err := InboxProcessTx(ctx, sp, "billing", "e-1", func(pgx.Tx) error { return errors.New("downstream down") })
	require.Error(t, err)
	require.False(t, dup)
	require.NoError(t, sp.Rollback(ctx))
	calls := 0
	reg := prometheus.NewRegistry()
	inbox, err := NewInbox(reg)
	require.NoError(t, err)
	inbox.ExposeConsumer("billing")
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Equal(t, 2, n, "both series exposed before the first event")
	dup, err = inbox.ProcessTx(ctx, tx, "billing", "e-1", func(pgx.Tx) error { calls++; return nil })
	require.NoError(t, err)
	require.False(t, dup)
	dup, err = inbox.ProcessTx(ctx, tx, "billing", "e-1", func(pgx.Tx) error { calls++; return nil })
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, 1.0, testutil.ToFloat64(inbox.applied.WithLabelValues("billing")))
	require.Equal(t, 1.0, testutil.ToFloat64(inbox.duplicates.WithLabelValues("billing")))
	// Another consumer applies the same event independently.
	dup, err = InboxProcessTx(ctx, tx, "analytics", "e-1", func(pgx.Tx) error { calls++; return nil })
	require.NoError(t, err)
	require.False(t, dup)
	require.Equal(t, 2, calls)
	_, err = InboxProcessTx(ctx, tx, "", "e-1", func(pgx.Tx) error { return nil })
	require.Error(t, err)
}
