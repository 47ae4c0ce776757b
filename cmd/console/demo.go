package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pgconsole/console/queues"
	"github.com/pgconsole/console/queues/webhookpub"
)

// demoQueues are the queues the demo workload feeds; "drills" runs the lock
// incidents.
var demoQueues = []string{"default", "email", "reports", "drills", "maintenance"}

// demoWorkload enqueues a steady mix of jobs (most succeed, some retry, a few
// die with a handful of error classes) and, every few minutes, a real lock
// chain, so every page of the console has something true to show. It runs
// until ctx ends.
func demoWorkload(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger, lockEvery time.Duration) {
	if _, err := pool.Exec(ctx, demoSetupSQL); err != nil {
		logger.Error("demo: create demo_accounts", "err", err)
		return
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	nextLock := time.Now().Add(20 * time.Second)
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		batch := []queues.EnqueueParams{
			{Queue: "default", Kind: "noop"},
			{Queue: "default", Kind: "sleep", Payload: map[string]int{"ms": 50 + rand.IntN(400)}},
			{Queue: "email", Kind: "sleep", Payload: map[string]int{"ms": 20 + rand.IntN(100)}},
		}
		if n%10 == 0 {
			batch = append(batch, queues.EnqueueParams{Queue: "reports", Kind: "fail", Payload: map[string]int{"times": 2}, MaxAttempts: 5})
		}
		if n%40 == 0 {
			// Always failing jobs die after their attempts: the dead letters
			// of the demo, in two error classes.
			batch = append(batch, queues.EnqueueParams{Queue: "email", Kind: "fail", Payload: map[string]int{"times": -1}, MaxAttempts: 2})
		}
		if n%120 == 0 {
			batch = append(batch, queues.EnqueueParams{Queue: "reports", Kind: "panic", MaxAttempts: 1})
		}
		if _, err := queues.EnqueueManyTx(ctx, pool, batch); err != nil && ctx.Err() == nil {
			logger.Warn("demo: enqueue", "err", err)
		}
		if n%2 == 0 {
			if _, err := queues.EnqueueEventTx(ctx, pool, queues.OutboxEvent{Topic: "orders", AggregateType: "order",
				AggregateID: fmt.Sprint(n), EventType: "order.created",
				Payload: map[string]any{"order_id": n, "amount_cents": 100 + rand.IntN(9900)}}); err != nil && ctx.Err() == nil {
				logger.Warn("demo: outbox event", "err", err)
			}
		}
		if lockEvery > 0 && time.Now().After(nextLock) {
			nextLock = time.Now().Add(lockEvery)
			if err := demoLockChain(ctx, pool); err != nil && ctx.Err() == nil {
				logger.Warn("demo: lock chain", "err", err)
			}
		}
	}
}

// demoSetupSQL creates the table the lock drills fight over.
const demoSetupSQL = `CREATE TABLE IF NOT EXISTS demo_accounts (id int PRIMARY KEY, balance bigint NOT NULL DEFAULT 0);
INSERT INTO demo_accounts (id) VALUES (1), (2) ON CONFLICT DO NOTHING`

// demoRootApplication is the application_name of the session that holds
// the demo's lock chain, named like the application a real incident's root
// belongs to.
const demoRootApplication = "billing-api"

// demoRootHold is how long the demo's root holds its row lock when nobody
// cancels it.
const demoRootHold = 60 * time.Second

// demoLease is the demo engine's lease: longer than demoRootHold, because a
// sql job's statement may not outlive its lease, and the demo's lock
// waiters are sql jobs that should wait as long as the root holds them.
const demoLease = demoRootHold + 30*time.Second

// demoLockChain stages a real blocking chain the way one happens in
// production: a session of another application (billing-api, a connection
// of its own, not one of the console's, so the guards let an operator
// cancel it) holds a row lock in a long statement, and two sql jobs of the
// drills queue queue behind it, the second behind the first. Cancelling the
// root clears the chain and the jobs finish; left alone, the root lets go
// after demoRootHold. It returns once the chain stands; the root's session
// closes when its statement ends.
func demoLockChain(ctx context.Context, pool *pgxpool.Pool) error {
	cfg := pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = demoRootApplication
	root, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect the demo's %s session: %w", demoRootApplication, err)
	}
	go func() {
		defer root.Close(context.WithoutCancel(ctx))
		hold := fmt.Sprintf(`SELECT pg_sleep(%d) FROM (SELECT id FROM demo_accounts WHERE id = 1 FOR UPDATE) AS held`,
			int(demoRootHold/time.Second))
		// Cancelled by an operator or ended with the demo: either way the
		// chain is over, and its error is the demo's story, not a fault.
		_, _ = root.Exec(ctx, hold)
	}()
	waiters := []string{
		`WITH second AS (SELECT id FROM demo_accounts WHERE id = 2 FOR UPDATE) UPDATE demo_accounts SET balance = balance + 1 WHERE id IN (1, (SELECT id FROM second))`,
		`UPDATE demo_accounts SET balance = balance - 1 WHERE id = 2`,
	}
	for i, st := range waiters {
		// Each link must stand before the next queues behind it.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		if _, err := queues.EnqueueTx(ctx, pool, queues.EnqueueParams{Queue: "drills", Kind: "sql",
			Payload: map[string]string{"statement": st}, MaxAttempts: 1}); err != nil {
			return fmt.Errorf("enqueue lock waiter %d: %w", i+1, err)
		}
	}
	return nil
}

// runDemo is `console demo`: the demo workload and an engine to work it,
// against DATABASE_URL, until interrupted.
func runDemo(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	fs := flagSet("demo")
	lockEvery := fs.Duration("lock-every", 3*time.Minute, "how often to stage a lock chain (0 turns it off)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	raw, err := requiredDatabaseURL(getenv, "demo needs DATABASE_URL (a scratch database: it adds demo jobs and a demo_accounts table)")
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))
	pooler, err := envPooler(getenv)
	if err != nil {
		return err
	}
	pool, err := attachWith(ctx, getenv, "console-demo", pooler)
	if err != nil {
		return err
	}
	defer pool.Close()
	sink, err := startDemoSink(pool, nil, logger)
	if err != nil {
		return err
	}
	defer sink.stop()
	pub, err := webhookpub.New(webhookpub.Config{URL: sink.URL})
	if err != nil {
		return err
	}
	e, err := startEngine(ctx, raw, engineConfig{Queues: demoQueues, Concurrency: 4, AllowSQL: true, Scheduler: true, Relay: pub, Pooler: pooler, Lease: demoLease},
		prometheus.NewRegistry(), logger)
	if err != nil {
		return err
	}
	defer func() { _ = e.stop() }()
	fmt.Fprintf(stdout, "demo workload running on %s; Ctrl-C stops it\n", target(raw))
	demoWorkload(ctx, pool, logger, *lockEvery)
	return nil
}

// demoSinkConsumer is the demo sink's consumer name in consumer_inbox and
// the consumer label of the inbox metrics.
const demoSinkConsumer = "demo-consumer"

// demoSink is the demo's event consumer: a webhook on loopback that applies
// each event once through the consumer inbox (the Idempotency-Key is the
// event id) and, now and then, answers 503 so the relay's retries show.
type demoSink struct {
	srv *http.Server
	URL string
}

// startDemoSink starts the sink. Its inbox metrics (events applied,
// duplicates skipped) go to reg, at zero from the start; nil keeps them
// private.
func startDemoSink(pool *pgxpool.Pool, reg prometheus.Registerer, logger *slog.Logger) (*demoSink, error) {
	inbox, err := queues.NewInbox(reg)
	if err != nil {
		return nil, fmt.Errorf("demo sink: %w", err)
	}
	inbox.ExposeConsumer(demoSinkConsumer)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("demo sink: %w", err)
	}
	var calls atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST events here", http.StatusMethodNotAllowed)
			return
		}
		if calls.Add(1)%25 == 0 {
			http.Error(w, "demo: temporarily unavailable", http.StatusServiceUnavailable)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			http.Error(w, "missing Idempotency-Key", http.StatusBadRequest)
			return
		}
		tx, err := pool.Begin(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer tx.Rollback(r.Context())
		if _, err := inbox.ProcessTx(r.Context(), tx, demoSinkConsumer, key, func(pgx.Tx) error { return nil }); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := tx.Commit(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s := &demoSink{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, URL: "http://" + ln.Addr().String() + "/events"}
	go func() {
		if err := s.srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			logger.Warn("demo sink stopped", "err", err)
		}
	}()
	return s, nil
}

func (s *demoSink) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
