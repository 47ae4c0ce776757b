package queues

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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
	"github.com/pgconsole/console/migrations"
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
	obEventually(t, 20*time.Second, "all events published", func() bool {
		return obCountState(t, pool, OutboxPublished) == len(ids)
	})
	seen := obStreamIDs(t, stream)
	require.Len(t, seen, len(ids))
	for _, id := range ids {
		require.Equal(t, 1, seen[strconv.FormatInt(id, 10)], "event %d", id)
	}
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
	obEventually(t, 20*time.Second, "events dead", func() bool { return obCountState(t, pool, OutboxDead) == 5 })
	require.Equal(t, int64(15), calls.Load())
	ev, err := OutboxEventGet(ctx, pool, ids[0])
	require.NoError(t, err)
	require.Equal(t, 3, ev.Attempts)
	require.Contains(t, *ev.LastError, "broker says no")
	require.NotNil(t, ev.DeadAt)
	st, err := OutboxStats(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, int64(5), st.Dead)

	failing.Store(false)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	got, err := OutboxRequeueTx(ctx, tx, OutboxRequeueParams{IDs: ids[:2]})
	require.NoError(t, err)
	require.Equal(t, ids[:2], got)
	require.NoError(t, tx.Commit(ctx))
	obEventually(t, 10*time.Second, "requeued published", func() bool { return obCountState(t, pool, OutboxPublished) == 2 })
	got, err = OutboxRequeueTx(ctx, pool, OutboxRequeueParams{Topic: "orders"})
	require.NoError(t, err)
	require.Len(t, got, 3)
	obEventually(t, 10*time.Second, "all published", func() bool { return obCountState(t, pool, OutboxPublished) == 5 })

	page, err := OutboxList(ctx, pool, OutboxListParams{Limit: 2})
	require.NoError(t, err)
	require.Len(t, page, 2)
	require.Equal(t, ids[4], page[0].ID)
	page, err = OutboxList(ctx, pool, OutboxListParams{Limit: 10, BeforeID: page[1].ID, State: OutboxPublished})
	require.NoError(t, err)
	require.Len(t, page, 3)
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
	obEventually(t, 20*time.Second, "all published", func() bool { return obCountState(t, pool, OutboxPublished) == 20 })
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
			st, err := OutboxStats(ctx, pool)
			require.NoError(t, err)
			require.Equal(t, int64(tc.inflight), st.Inflight)
			require.Equal(t, int64(tc.acceptedUnmarked), st.AcceptedUnmarked)
			require.Equal(t, tc.published, obCountState(t, pool, OutboxPublished))

			pub := obPublisher(t, nc)
			r := obRelay(t, pool, RelayConfig{Publisher: pub, ID: "relay-fresh", BatchSize: 10, LeaseDuration: 2 * time.Second})
			obEventually(t, 30*time.Second, "every event published", func() bool {
				return obCountState(t, pool, OutboxPublished) == len(ids)
			})
			seen := obStreamIDs(t, stream)
			require.Len(t, seen, len(ids))
			for _, id := range ids {
				require.Equal(t, 1, seen[strconv.FormatInt(id, 10)], "event %d seen by the consumer", id)
			}
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

func TestRelaySurvivesPostgresAndNATSRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := testdb.NewServer(t, map[string]string{"max_connections": "40"})
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	_, err = migrations.Up(ctx, conn)
	require.NoError(t, err)
	conn.Close(ctx)
	pool := testdb.Pool(t, srv.URL("postgres"))

	ns := obStartNATS(t)
	nc := ns.connect(t)
	stream := ns.stream(t, nc)
	pub := obPublisher(t, nc)
	obRelay(t, pool, RelayConfig{Publisher: pub, BatchSize: 20, LeaseDuration: 3 * time.Second,
		BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond})

	var ids []int64
	ids = append(ids, obEnqueue(t, pool, "orders", 100)...)
	obEventually(t, 20*time.Second, "first events", func() bool { return obCountState(t, pool, OutboxPublished) == len(ids) })

	require.NoError(t, srv.Restart(ctx))
	// Enqueue through the restart's aftermath: the pool reconnects.
	obEventually(t, 20*time.Second, "database back", func() bool { return pool.Ping(ctx) == nil })
	ids = append(ids, obEnqueue(t, pool, "orders", 100)...)
	obEventually(t, 30*time.Second, "events after PostgreSQL restart", func() bool {
		return obCountState(t, pool, OutboxPublished) == len(ids)
	})

	ns.restart()
	ids = append(ids, obEnqueue(t, pool, "orders", 100)...)
	obEventually(t, 30*time.Second, "events after NATS restart", func() bool {
		return obCountState(t, pool, OutboxPublished) == len(ids)
	})
	seen := obStreamIDs(t, stream)
	require.Len(t, seen, len(ids))
	for _, id := range ids {
		require.Equal(t, 1, seen[strconv.FormatInt(id, 10)])
	}
}
