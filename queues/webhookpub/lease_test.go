package webhookpub_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/webhookpub"
)

// A consumer that accepts every request and never answers holds each
// publish for its whole timeout, so one relay's batch outlasts its lease.
// The relay renews the lease instead of letting a second relay reclaim
// events it is still delivering, and never starts a publish the lease left
// cannot cover: no event reaches the consumer twice, and every delivery is
// counted on its event and in the attempts metric.
func TestNeverAnsweringConsumerGetsEachEventOnce(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)

	var mu sync.Mutex
	deliveries := map[string]int{}
	hangUp := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		deliveries[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		// Reading the body to its end lets the server notice the client
		// giving up.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-hangUp:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(hangUp) })

	// Each event may be tried twice, but a relay gives up after one failed
	// publish: a second delivery can only come from a second relay taking
	// over a lease the first one is still publishing under.
	const n = 12
	ids := enqueue(t, pool, n)
	_, err := pool.Exec(t.Context(), "UPDATE outbox_events SET max_attempts = 2")
	require.NoError(t, err)

	pub, err := webhookpub.New(webhookpub.Config{URL: srv.URL})
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	// Four rounds of three publishes of 600 ms each: 2.4 s of publishing
	// against a lease of 1.5 s.
	cfg := queues.RelayConfig{Publisher: pub, BatchSize: n, Concurrency: 3, LeaseDuration: 1500 * time.Millisecond,
		PublishTimeout: 600 * time.Millisecond, MaxAttempts: 1, Registerer: reg}
	cfg.ID = "relay-a"
	startRelay(t, pool, cfg)
	// The second relay starts once the first holds the whole batch: two
	// relays started together may split the events, and half a batch ends
	// within its lease.
	testdb.Eventually(t, 10*time.Second, "relay-a holding every event", func() bool {
		return countState(t, pool, queues.OutboxInflight) == n
	})
	cfg.ID = "relay-b"
	startRelay(t, pool, cfg)

	testdb.Eventually(t, time.Minute, "every event dead after its one attempt", func() bool {
		return countState(t, pool, queues.OutboxDead) == n
	})

	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		ev, err := queues.OutboxEventGet(t.Context(), pool, id)
		require.NoError(t, err)
		got := deliveries[strconv.FormatInt(id, 10)]
		require.LessOrEqual(t, got, 1, "event %d reached the consumer twice", id)
		require.Equal(t, 1, ev.Attempts, "event %d: attempts", id)
		require.LessOrEqual(t, got, ev.Attempts, "event %d reached the consumer more often than its attempts say", id)
	}
	require.Equal(t, float64(n), metric(t, reg, "queues_relay_publish_attempts_total"))
	require.GreaterOrEqual(t, metric(t, reg, "queues_relay_lease_renewals_total"), 1.0, "the batch outlasted its lease without renewing it")
	require.Zero(t, metric(t, reg, "queues_relay_reclaimed_total"), "a lease expired under a running batch")
}

// metric reads one unlabelled counter of reg.
func metric(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			require.Len(t, mf.GetMetric(), 1, name)
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s not registered", name)
	return 0
}
