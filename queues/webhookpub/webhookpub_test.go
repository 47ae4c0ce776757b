package webhookpub_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/webhookpub"
)

func TestMain(m *testing.M) { testdb.Main(m) }

func startRelay(t testing.TB, pool *pgxpool.Pool, cfg queues.RelayConfig) *queues.Relay {
	t.Helper()
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	r, err := queues.NewRelay(pool, cfg)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(r.Stop)
	return r
}

// enqueue commits n order events and returns their ids.
func enqueue(t testing.TB, pool *pgxpool.Pool, n int) []int64 {
	t.Helper()
	evs := make([]queues.OutboxEvent, n)
	for i := range evs {
		evs[i] = queues.OutboxEvent{Topic: "orders", AggregateType: "order", AggregateID: "o-1",
			EventType: "order.created", Payload: map[string]int{"n": i}}
	}
	ids, err := queues.EnqueueEventsTx(context.Background(), pool, evs)
	require.NoError(t, err)
	return ids
}

// countState counts the outbox events in state.
func countState(t testing.TB, pool *pgxpool.Pool, state string) int {
	return testdb.Count(t, pool, "SELECT count(*) FROM outbox_events WHERE state = $1", state)
}

func TestPublisherThroughRelay(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	var mu sync.Mutex
	keys := map[string]int{}
	var fails atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		require.True(t, json.Valid(body))
		key := r.Header.Get("Idempotency-Key")
		// Every event fails once with a 503, then is accepted.
		mu.Lock()
		keys[key]++
		n := keys[key]
		mu.Unlock()
		if n == 1 {
			fails.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("Event-Type") != "order.created" || r.Header.Get("X-Token") != "s3cret" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)

	pub, err := webhookpub.New(webhookpub.Config{URL: srv.URL, Timeout: 2 * time.Second, Headers: map[string]string{"X-Token": "s3cret"}})
	require.NoError(t, err)
	startRelay(t, pool, queues.RelayConfig{Publisher: pub, BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	ids := enqueue(t, pool, 10)
	testdb.Eventually(t, 20*time.Second, "webhook events published", func() bool { return countState(t, pool, queues.OutboxPublished) == 10 })
	mu.Lock()
	for _, id := range ids {
		require.Equal(t, 2, keys[strconv.FormatInt(id, 10)])
	}
	mu.Unlock()
	require.Equal(t, int64(10), fails.Load())

	// A receiver that never answers is a timeout, i.e. a failure.
	slowPub, err := webhookpub.New(webhookpub.Config{URL: slow.URL, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	err = slowPub.Publish(context.Background(), &queues.OutboxMessage{ID: 1, Topic: "t", EventType: "e", Payload: json.RawMessage(`{}`)})
	require.Error(t, err)
	require.Less(t, time.Since(start), 5*time.Second)
}

// A webhook that refuses an event for good (422) sends it dead at once,
// without burning retries; polling alone (no LISTEN) drives the relay.
func TestPermanentRefusalGoesDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Event-Type") == "order.invalid" {
			http.Error(w, "schema mismatch", http.StatusUnprocessableEntity)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	pub, err := webhookpub.New(webhookpub.Config{URL: srv.URL})
	require.NoError(t, err)
	startRelay(t, pool, queues.RelayConfig{Publisher: pub, DisableListen: true, PollInterval: 50 * time.Millisecond})
	good, err := queues.EnqueueEventTx(ctx, pool, queues.OutboxEvent{Topic: "orders", EventType: "order.created", Payload: map[string]int{"a": 1}})
	require.NoError(t, err)
	bad, err := queues.EnqueueEventTx(ctx, pool, queues.OutboxEvent{Topic: "orders", EventType: "order.invalid", Payload: map[string]int{"a": 2}})
	require.NoError(t, err)
	testdb.Eventually(t, 20*time.Second, "both settled", func() bool {
		return countState(t, pool, queues.OutboxPublished) == 1 && countState(t, pool, queues.OutboxDead) == 1
	})
	ev, err := queues.OutboxEventGet(ctx, pool, bad)
	require.NoError(t, err)
	require.Equal(t, queues.OutboxDead, ev.State)
	require.Equal(t, 1, ev.Attempts)
	require.Contains(t, *ev.LastError, "422")
	ev, err = queues.OutboxEventGet(ctx, pool, good)
	require.NoError(t, err)
	require.Equal(t, queues.OutboxPublished, ev.State)
}
