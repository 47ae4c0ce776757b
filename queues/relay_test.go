package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func obRelay(t testing.TB, pool *pgxpool.Pool, cfg RelayConfig) *Relay {
	t.Helper()
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	r, err := NewRelay(pool, cfg)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background()))
	t.Cleanup(r.Stop)
	return r
}

func TestOutboxEnqueueNotifiesOncePerTransaction(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	cfg := pool.Config().ConnConfig.Copy()
	ln, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer ln.Close(ctx)
	_, err = ln.Exec(ctx, "LISTEN "+OutboxChannel)
	require.NoError(t, err)

	expectOne := func(what string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := ln.WaitForNotification(wctx)
		require.NoError(t, err, what)
		qctx, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer qcancel()
		_, err = ln.WaitForNotification(qctx)
		require.Error(t, err, "%s: a second notification arrived", what)
	}
	// 50 rows in one transaction: one notification, not 50.
	obEnqueue(t, pool, "orders", 50)
	expectOne("first transaction")
	// With a due backlog, a relay is already busy: no notification.
	obEnqueue(t, pool, "orders", 1)
	qctx, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = ln.WaitForNotification(qctx)
	qcancel()
	require.Error(t, err, "notified although a backlog was due")
	// Backlog drained: the next transaction wakes the relays again.
	_, err = pool.Exec(ctx, "UPDATE outbox_events SET state = 'published', published_at = now()")
	require.NoError(t, err)
	obEnqueue(t, pool, "orders", 3)
	expectOne("after the backlog drained")

	// A rolled back transaction leaves neither events nor a notification.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = EnqueueEventTx(ctx, tx, OutboxEvent{Topic: "orders", EventType: "order.created", Payload: json.RawMessage(`{"a":1}`)})
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	require.Equal(t, 3, obCountState(t, pool, OutboxPending))

	_, err = EnqueueEventTx(ctx, pool, OutboxEvent{Topic: "", EventType: "x"})
	require.Error(t, err)
	_, err = EnqueueEventTx(ctx, pool, OutboxEvent{Topic: "t", EventType: "x", Payload: []byte("{bad")})
	require.Error(t, err)
}

func TestOutboxClaimUsesPendingPickIndex(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO outbox_events (topic, event_type, payload, state, published_at)
		SELECT 't', 'e', '{}', 'published', now() FROM generate_series(1, 20000)`)
	require.NoError(t, err)
	obEnqueue(t, pool, "t", 100)
	_, err = pool.Exec(ctx, "ANALYZE outbox_events")
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, "EXPLAIN "+sqlText("outbox_claim"), 10, "x", 1000)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(plan), "outbox_pending_pick_idx")
}

func TestRelayPublishesToJetStream(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ns := obStartNATS(t)
	nc := ns.connect(t)
	stream := ns.stream(t, nc)
	pub := obPublisher(t, nc)
	reg := prometheus.NewRegistry()
	r := obRelay(t, pool, RelayConfig{Publisher: pub, BatchSize: 50, Registerer: reg})
	// Several relays, no leader: both drain the same table.
	obRelay(t, pool, RelayConfig{Publisher: pub, BatchSize: 50, Registerer: reg})

	ids := obEnqueue(t, pool, "orders", 300)
	testdb.Eventually(t, 20*time.Second, "all events published", func() bool {
		return obCountState(t, pool, OutboxPublished) == len(ids)
	})
	obRequireOnceEach(t, stream, ids)
	ev, err := OutboxEventGet(context.Background(), pool, ids[0])
	require.NoError(t, err)
	require.NotNil(t, ev.AcceptedAt)
	require.NotNil(t, ev.PublishedAt)
	require.Equal(t, 1, ev.PublishCount)
	require.Equal(t, float64(len(ids)), testutil.ToFloat64(r.metrics.published))
	_, err = OutboxEventGet(context.Background(), pool, -1)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestRelayRetriesThenDeadThenRequeue(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	var failing atomic.Bool
	failing.Store(true)
	var calls atomic.Int64
	pub := PublisherFunc(func(ctx context.Context, m *OutboxMessage) error {
		calls.Add(1)
		if failing.Load() {
			return errors.New("broker says no")
		}
		return nil
	})
	obRelay(t, pool, RelayConfig{Publisher: pub, MaxAttempts: 3, BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	ids := obEnqueue(t, pool, "orders", 5)
	testdb.Eventually(t, 20*time.Second, "events dead", func() bool { return obCountState(t, pool, OutboxDead) == 5 })
	require.Equal(t, int64(15), calls.Load())
	ev, err := OutboxEventGet(ctx, pool, ids[0])
	require.NoError(t, err)
	require.Equal(t, 3, ev.Attempts)
	require.Contains(t, *ev.LastError, "broker says no")
	require.NotNil(t, ev.DeadAt)
	st, err := OutboxHealth(ctx, pool, 0)
	require.NoError(t, err)
	require.Equal(t, int64(5), st.Dead)

	failing.Store(false)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) }) // a failed check must not leave the pool waiting on tx
	got, err := OutboxRequeueTx(ctx, tx, OutboxRequeueParams{IDs: ids[:2]})
	require.NoError(t, err)
	require.Equal(t, ids[:2], got)
	require.NoError(t, tx.Commit(ctx))
	testdb.Eventually(t, 10*time.Second, "requeued published", func() bool { return obCountState(t, pool, OutboxPublished) == 2 })
	got, err = OutboxRequeueTx(ctx, pool, OutboxRequeueParams{Topic: "orders"})
	require.NoError(t, err)
	require.Len(t, got, 3)
	testdb.Eventually(t, 10*time.Second, "all published", func() bool { return obCountState(t, pool, OutboxPublished) == 5 })

	page, err := OutboxList(ctx, pool, OutboxListParams{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.Equal(t, ids[4], page[0].ID)
	page, err = OutboxList(ctx, pool, OutboxListParams{Limit: 10, BeforeID: page[1].ID, State: OutboxPublished})
	require.NoError(t, err)
	require.Len(t, page, 3)
	page, err = OutboxList(ctx, pool, OutboxListParams{})
	require.NoError(t, err)
	require.Len(t, page, 5, "no limit given: the default page of 50")
}

func TestRelaySettingsPauseResumeThrottle(t *testing.T) {
	t.Parallel()
	pool := testdb.New(t)
	ctx := context.Background()
	var published atomic.Int64
	pub := PublisherFunc(func(ctx context.Context, m *OutboxMessage) error { published.Add(1); return nil })
	who := "alice"
	_, err := RelaySettingsSetTx(ctx, pool, RelaySettings{Paused: true, UpdatedBy: &who})
	require.NoError(t, err)
	obRelay(t, pool, RelayConfig{Publisher: pub, PollInterval: 100 * time.Millisecond})
	obEnqueue(t, pool, "orders", 20)
	// Paused: after several poll intervals, nothing was claimed.
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.Equal(t, 20, obCountState(t, pool, OutboxPending))
		time.Sleep(50 * time.Millisecond)
	}
	one := 1
	rps := 20.0
	s, err := RelaySettingsSetTx(ctx, pool, RelaySettings{BatchSize: &one, RatePerSecond: &rps, UpdatedBy: &who})
	require.NoError(t, err)
	require.False(t, s.Paused)
	got, err := RelaySettingsGet(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 1, *got.BatchSize)
	require.Equal(t, "alice", *got.UpdatedBy)
	testdb.Eventually(t, 20*time.Second, "all published", func() bool { return obCountState(t, pool, OutboxPublished) == 20 })
	require.Equal(t, int64(20), published.Load())
	bad := 0
	_, err = RelaySettingsSetTx(ctx, pool, RelaySettings{BatchSize: &bad})
	require.Error(t, err)
}

// Relay crash windows: the three points where a relay can die mid-batch
// (before publishing, after publishing but before marking, after
// marking). A child process (this test binary) runs a
// relay and dies with os.Exit at the injected point, for real: no deferred
// cleanup, no graceful release, its connections simply vanish. A fresh relay
// then finishes the work.
const obCrashEnv = "OUTBOX_RELAY_CRASH_WINDOW"

func TestRelayCrashChild(t *testing.T) {
	window := os.Getenv(obCrashEnv)
	if window == "" {
		return // only runs as the child of TestRelayCrashWindows
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("OUTBOX_CRASH_DB"))
	require.NoError(t, err)
	nc := (&obNATS{}).dial(t, os.Getenv("OUTBOX_CRASH_NATS"))
	pub := obPublisher(t, nc)
	r, err := NewRelay(pool, RelayConfig{Publisher: pub, ID: "relay-crashing", BatchSize: 10, LeaseDuration: 2 * time.Second, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	batches := 0
	crash := func(point string) func([]*OutboxMessage) {
		return func([]*OutboxMessage) {
			if point == window && batches == 2 {
				os.Exit(7)
			}
		}
	}
	r.hooks.beforePublish = crash("before_publish")
	r.hooks.afterPublish = crash("after_publish")
	r.hooks.afterMark = func(ms []*OutboxMessage) { crash("after_mark")(ms); batches++ }
	require.NoError(t, r.Start(ctx))
	select {}
}

func (*obNATS) dial(t testing.TB, url string) *nats.Conn {
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	return nc
}

func TestRelayCrashWindows(t *testing.T) {
	testdb.SkipShort(t, "a relay process of its own per crash window")
	for _, tc := range []struct {
		name, window string
		// after the crash: events inflight with accepted_at set, published
		inflight, acceptedUnmarked, published int
	}{
		{"BeforePublish", "before_publish", 10, 0, 20},
		{"AfterPublishBeforeMark", "after_publish", 10, 10, 20},
		{"AfterMark", "after_mark", 0, 0, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := testdb.URL(t)
			pool := testdb.Pool(t, url)
			ns := obStartNATS(t)
			nc := ns.connect(t)
			stream := ns.stream(t, nc)
			ids := obEnqueue(t, pool, "orders", 50)

			cmd := exec.Command(os.Args[0], "-test.run=^TestRelayCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), obCrashEnv+"="+tc.window, "OUTBOX_CRASH_DB="+url, "OUTBOX_CRASH_NATS="+ns.url())
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "child output:\n%s", out)
			require.Equal(t, 7, exit.ExitCode(), "child output:\n%s", out)

			ctx := context.Background()
			st, err := OutboxHealth(ctx, pool, 0)
			require.NoError(t, err)
			require.Equal(t, int64(tc.inflight), st.Inflight)
			require.Equal(t, int64(tc.acceptedUnmarked), st.AcceptedUnmarked)
			require.Equal(t, tc.published, obCountState(t, pool, OutboxPublished))

			pub := obPublisher(t, nc)
			r := obRelay(t, pool, RelayConfig{Publisher: pub, ID: "relay-fresh", BatchSize: 10, LeaseDuration: 2 * time.Second})
			testdb.Eventually(t, 30*time.Second, "every event published", func() bool {
				return obCountState(t, pool, OutboxPublished) == len(ids)
			})
			obRequireOnceEach(t, stream, ids)
			// The republished events after the mark window are the duplicates
			// JetStream dropped and the outbox counted.
			require.Equal(t, int64(tc.acceptedUnmarked), pub.duplicates.Load())
			var republished int
			require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM outbox_events WHERE publish_count > 1").Scan(&republished))
			require.Equal(t, tc.acceptedUnmarked, republished)
			require.Equal(t, float64(tc.inflight), testutil.ToFloat64(r.metrics.reclaimed))
		})
	}
}

// obGate passes publishes to inner; while armed it holds each at the gate
// until released, so a test can restart a server while a relay is in the
// middle of publishing a claimed batch.
type obGate struct {
	inner    Publisher
	mu       sync.Mutex
	open     chan struct{} // nil while disarmed
	held     int
	returned int
}

func (g *obGate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open, g.held, g.returned = make(chan struct{}), 0, 0
}

// release opens the gate and returns how many publishes it held.
func (g *obGate) release() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
	return g.held
}

func (g *obGate) counts() (held, returned int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held, g.returned
}

func (g *obGate) Publish(ctx context.Context, m *OutboxMessage) error {
	g.mu.Lock()
	open := g.open
	if open != nil {
		g.held++
	}
	g.mu.Unlock()
	if open == nil {
		return g.inner.Publish(ctx, m)
	}
	<-open
	// The relay's deadline ran on while the publish was held: give it a
	// second of its own, as if it had just started.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	err := g.inner.Publish(pctx, m)
	g.mu.Lock()
	g.returned++
	g.mu.Unlock()
	return err
}

// obProduce commits a steady stream of events, two per transaction every
// 10ms, until the returned stop is called (at the latest at cleanup, after
// 3000 events or after two minutes). A transaction that fails (the database
// is restarting) is retried; a commit cut by a restart may or may not have
// landed, so the table, not the producer, says which events exist.
func obProduce(t testing.TB, pool *pgxpool.Pool, topic string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(2 * time.Minute)
		for n := 0; n < 3000 && time.Now().Before(deadline); {
			tx, err := pool.Begin(ctx)
			if err == nil {
				_, err = EnqueueEventsTx(ctx, tx, []OutboxEvent{
					{Topic: topic, EventType: "order.created", Payload: map[string]int{"n": n}},
					{Topic: topic, EventType: "order.created", Payload: map[string]int{"n": n + 1}},
				})
				if err == nil {
					err = tx.Commit(ctx)
				}
				tx.Rollback(ctx)
			}
			if err == nil {
				n += 2
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

// Two relays drain a steady stream of events while PostgreSQL restarts with
// one relay in the middle of a claim and the other in the middle of
// publishing a claimed batch, then while NATS restarts with publishes in
// flight. Every event the table holds reaches the consumer exactly once
// (by event id), and none is left pending, inflight or dead.
func TestRelaySurvivesPostgresAndNATSRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, url := migratedServer(t, map[string]string{"max_connections": "40"})
	pool := testdb.Pool(t, url+"&pool_max_conns=10")

	ns := obStartNATS(t)
	nc := ns.connect(t)
	stream := ns.stream(t, nc)
	pub := obPublisher(t, nc)
	gate := &obGate{inner: pub}
	cfg := RelayConfig{BatchSize: 20, LeaseDuration: 2 * time.Second, PublishTimeout: time.Second,
		BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond}
	cfg.Publisher, cfg.ID = gate, "relay-gated"
	gated := obRelay(t, pool, cfg)
	// The free relay scans for expired leases only twice a second (once per
	// poll interval; the stream's notifications wake it far more often), so
	// the statement it starts when woken is most likely a claim.
	cfg.Publisher, cfg.ID, cfg.PollInterval = pub, "relay-free", 500*time.Millisecond
	free := obRelay(t, pool, cfg)
	t.Cleanup(func() { gate.release() }) // before the relays stop

	stop := obProduce(t, pool, "orders")
	testdb.Eventually(t, 20*time.Second, "a steady stream being published", func() bool {
		return obCountState(t, pool, OutboxPublished) >= 100
	})

	// PostgreSQL, mid-publish: the gated relay holds a claimed batch at the
	// gate. Mid-claim: with outbox_events locked against writes (the
	// stream's inserts too, so no notification comes), the other relay is
	// woken and its claim waits on the lock. The relay may be publishing
	// and reach its mark first; then unlock and try again.
	gate.arm()
	testdb.Eventually(t, 20*time.Second, "a publish held at the gate", func() bool { held, _ := gate.counts(); return held > 0 })
	lockConn, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	t.Cleanup(func() { lockConn.Close(context.Background()) })
	claimWaiting := func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE state = 'active' AND wait_event_type = 'Lock' AND query LIKE '-- outboxClaim:%'`).Scan(&n))
		return n > 0
	}
	for attempt := 1; ; attempt++ {
		_, err = lockConn.Exec(ctx, "BEGIN; LOCK TABLE outbox_events IN EXCLUSIVE MODE")
		require.NoError(t, err)
		waited := time.Now().Add(time.Second)
		for free.Wake(); !claimWaiting() && time.Now().Before(waited); free.Wake() {
			time.Sleep(20 * time.Millisecond)
		}
		if claimWaiting() {
			break
		}
		_, err = lockConn.Exec(ctx, "ROLLBACK")
		require.NoError(t, err)
		require.Less(t, attempt, 20, "no relay claim ever waited on the table lock")
		t.Logf("attempt %d: the relays waited on the lock elsewhere; trying again", attempt)
		time.Sleep(time.Duration(attempt*13%50) * time.Millisecond)
	}
	require.NoError(t, srv.Stop())
	lockConn.Close(ctx)
	// The held publishes reach the broker while the database is down, so
	// their marks fail and the events stay inflight until the lease expires.
	held := gate.release()
	testdb.Eventually(t, 20*time.Second, "the held publishes to finish", func() bool { _, r := gate.counts(); return r == held })
	testdb.Eventually(t, 20*time.Second, "the gated relay's marks to fail", func() bool {
		return testutil.ToFloat64(gated.metrics.markFailures) > 0
	})
	require.NoError(t, srv.Restart(ctx))

	// NATS, mid-publish: the broker goes away with a batch held at the gate
	// (and whatever the other relay has in flight); the held publishes fail
	// against the down broker and are retried once it is back.
	gate.arm()
	testdb.Eventually(t, 20*time.Second, "a publish held at the gate", func() bool { held, _ := gate.counts(); return held > 0 })
	failures := testutil.ToFloat64(gated.metrics.failures)
	ns.srv.Shutdown()
	ns.srv.WaitForShutdown()
	held = gate.release()
	testdb.Eventually(t, 20*time.Second, "the held publishes to fail", func() bool { _, r := gate.counts(); return r == held })
	testdb.Eventually(t, 20*time.Second, "the gated relay to record the failures", func() bool {
		return testutil.ToFloat64(gated.metrics.failures) > failures
	})
	ns.start()
	published := obCountState(t, pool, OutboxPublished)
	testdb.Eventually(t, 30*time.Second, "publishing to resume after the NATS restart", func() bool {
		return obCountState(t, pool, OutboxPublished) > published+100
	})
	stop()

	var left string
	deadline := time.Now().Add(60 * time.Second)
	for {
		require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(string_agg(state || ': ' || n, ', '), '')
			FROM (SELECT state, count(*) AS n FROM outbox_events WHERE state <> 'published' GROUP BY state) s`).Scan(&left))
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events left behind 60s after the stream stopped: %s", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rows, err := pool.Query(ctx, "SELECT id FROM outbox_events ORDER BY id")
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	obRequireOnceEach(t, stream, ids)
	// The batch held across the PostgreSQL restart was accepted, its marks
	// failed, and it was republished after its lease expired.
	require.Positive(t, pub.duplicates.Load(), "no republish: the PostgreSQL restart did not hit a publish")
	t.Logf("%d events; %d republishes absorbed by JetStream", len(ids), pub.duplicates.Load())
}
