package queues

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/pgconsole/console/internal/lifecycle"
	"github.com/pgconsole/console/internal/sqlset"
)

// Publisher delivers one outbox event to a broker. A nil error means the
// broker accepted it (durably, for JetStream). An error means it may or may
// not have been accepted: the relay retries, so brokers and consumers must
// dedupe on m.EventID(). An error wrapped with Permanent (the broker refused
// the event for good) sends it dead at once, for an operator to requeue.
// Publish must honour ctx's deadline.
type Publisher interface {
	Publish(ctx context.Context, m *OutboxMessage) error
}

// PublisherFunc adapts a function to Publisher.
type PublisherFunc func(ctx context.Context, m *OutboxMessage) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, m *OutboxMessage) error { return f(ctx, m) }

// RelayConfig configures a Relay. Zero values take the documented defaults.
type RelayConfig struct {
	// Publisher delivers events. Required.
	Publisher Publisher
	// ID names this relay as lease owner; default host-pid-random. Two
	// relays must never share an ID.
	ID string
	// BatchSize is how many events one claim takes (default 100); the
	// relay_settings row overrides it fleet-wide.
	BatchSize int
	// Concurrency bounds publishes in flight per relay (default 16).
	Concurrency int
	// LeaseDuration is how long a claim is owned before another relay may
	// reclaim it (default 30s). A batch whose publishes outlast it renews
	// it; a publish starts only while the lease left covers PublishTimeout
	// and a tenth of the lease for the mark, so no other relay can claim an
	// event while this one may still be delivering it.
	LeaseDuration time.Duration
	// PollInterval is the longest the relay waits between scans without a
	// notification, and how quickly it sees relay_settings changes
	// (default 1s).
	PollInterval time.Duration
	// PublishTimeout bounds one Publish call (default 10s, at most half the
	// lease).
	PublishTimeout time.Duration
	// MaxAttempts, when positive, caps attempts below each event's own
	// max_attempts; the event goes dead after that many failed publishes.
	MaxAttempts int
	// BackoffBase and BackoffMax shape the retry delay after a failed
	// publish: full jitter over min(BackoffMax, BackoffBase*2^(attempt-1)).
	// Defaults 1s and 5m.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// DisableListen turns off LISTEN (behind a pooler in transaction mode,
	// where LISTEN does not work); wake-ups then come from polling only.
	DisableListen bool
	// SessionConnConfig, when set, is the connection of the LISTEN session
	// instead of the pool's: a direct connection to PostgreSQL beside a
	// pool behind a transaction pooler. nil: the pool's settings.
	SessionConnConfig *pgx.ConnConfig
	// Registerer receives the relay metrics; nil keeps them private.
	Registerer prometheus.Registerer
	// Logger receives operational logs; nil discards them.
	Logger *slog.Logger
}

// Relay drains outbox_events to a Publisher: claim a batch (SKIP LOCKED,
// fenced by owner and generation), publish outside any transaction, renewing
// the batch's lease when its publishes outlast it, record acceptance, then
// mark published. Every publish started is one of the event's attempts: the
// claim counts it, and only a claim whose publish never started gives it
// back. Any number of relays can run against one
// database; there is no leader. It wakes on NOTIFY and polls regardless.
type Relay struct {
	pool    *pgxpool.Pool
	cfg     RelayConfig
	log     *slog.Logger
	metrics *relayMetrics
	wake    chan struct{}
	hooks   relayHooks

	life      lifecycle.Runner
	settings  RelaySettings // owned by the claim loop
	settingAt time.Time
	reclaimAt time.Time
	// readOnly stands the relay down while the database is a standby;
	// owned by the claim loop.
	readOnly readOnlyWatch
}

// relayHooks are crash-window injection points for tests: each runs with the
// batch's messages at that point of the protocol.
type relayHooks struct {
	beforePublish func([]*OutboxMessage)
	afterPublish  func([]*OutboxMessage)
	afterMark     func([]*OutboxMessage)
}

type relayMetrics struct {
	claimed        prometheus.Counter
	published      prometheus.Counter
	attempts       prometheus.Counter
	failures       prometheus.Counter
	dead           prometheus.Counter
	markFailures   prometheus.Counter
	staleMarks     prometheus.Counter
	reclaimed      prometheus.Counter
	renewals       prometheus.Counter
	publishSeconds prometheus.Histogram
	batchSeconds   prometheus.Histogram
}

func newRelayMetrics(reg prometheus.Registerer) (*relayMetrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	counter := func(name, help string) (prometheus.Counter, error) {
		return registerCollector(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
	}
	m := &relayMetrics{}
	var err error
	for _, c := range []struct {
		dst        *prometheus.Counter
		name, help string
	}{
		{&m.claimed, "queues_relay_claimed_total", "Outbox events claimed by relays."},
		{&m.published, "queues_relay_published_total", "Outbox events accepted by the broker and marked published."},
		{&m.attempts, "queues_relay_publish_attempts_total", "Publish attempts started, answered or not (each is one of its event's attempts)."},
		{&m.failures, "queues_relay_publish_failures_total", "Failed publish attempts (retried with backoff)."},
		{&m.dead, "queues_relay_dead_total", "Outbox events that went dead after their last attempt."},
		{&m.markFailures, "queues_relay_mark_failures_total", "Events the broker accepted whose published mark failed (each may be delivered twice)."},
		{&m.staleMarks, "queues_relay_stale_marks_total", "Marks fenced out because the lease was taken over."},
		{&m.reclaimed, "queues_relay_reclaimed_total", "Expired relay leases returned to pending or dead."},
		{&m.renewals, "queues_relay_lease_renewals_total", "Lease renewals of relay batches whose publishes outlast the lease."},
	} {
		if *c.dst, err = counter(c.name, c.help); err != nil {
			return nil, err
		}
	}
	if m.publishSeconds, err = registerCollector(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "queues_relay_publish_seconds", Help: "Latency of one Publish call.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
	})); err != nil {
		return nil, err
	}
	if m.batchSeconds, err = registerCollector(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "queues_relay_batch_seconds", Help: "Claim-to-mark latency of one relay batch.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 9),
	})); err != nil {
		return nil, err
	}
	return m, nil
}

// registerCollector registers c, or returns the collector already registered
// under the same description (several relays in one process share metrics).
func registerCollector[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		var zero T
		return zero, fmt.Errorf("register metric: %w", err)
	}
	return c, nil
}

// NewRelay builds a relay on pool; Start runs it. The pool is the caller's
// and is not closed by Stop.
func NewRelay(pool *pgxpool.Pool, cfg RelayConfig) (*Relay, error) {
	if cfg.Publisher == nil {
		return nil, errors.New("relay: a Publisher is required")
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		cfg.ID = fmt.Sprintf("relay-%s-%d-%04x", host, os.Getpid(), rand.Uint32N(1<<16))
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.PublishTimeout <= 0 {
		cfg.PublishTimeout = 10 * time.Second
	}
	cfg.PublishTimeout = min(cfg.PublishTimeout, cfg.LeaseDuration/2)
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = time.Second
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 5 * time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newRelayMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("relay metrics: %w", err)
	}
	r := &Relay{
		pool: pool, cfg: cfg, log: log.With("relay", cfg.ID), metrics: m,
		wake: make(chan struct{}, 1),
	}
	r.readOnly = readOnlyWatch{what: "outbox relay", log: r.log}
	return r, nil
}

// ID returns the lease owner name of this relay.
func (r *Relay) ID() string { return r.cfg.ID }

// Start launches the relay's goroutines (the claim loop, and the LISTEN
// connection unless disabled) and returns at once. ctx bounds the relay's life as Stop does.
// It refuses a pool whose transactions do not default to READ COMMITTED
// (RequireReadCommitted).
func (r *Relay) Start(ctx context.Context) error {
	if err := RequireReadCommitted(ctx, r.pool); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	loops := []func(context.Context){r.loop}
	if !r.cfg.DisableListen {
		loops = append(loops, r.listen)
	}
	if err := r.life.Start(ctx, loops...); err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	return nil
}

// Stop stops claiming, lets the batch in flight finish its publishes and
// marks (bounded by PublishTimeout), gives back claimed events it did not
// start, and waits for the goroutines to end.
func (r *Relay) Stop() { r.life.Stop() }

// Wake asks the relay to scan now (a hint, like a notification).
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Relay) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := r.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("relay listen connection lost; polling until it is back", "error", err)
		_ = sleepCtx(ctx, r.cfg.PollInterval)
	}
}

func (r *Relay) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, sessionConfig(r.pool, r.cfg.SessionConnConfig))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+OutboxChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Anything committed while we were not listening is found by a scan.
	r.Wake()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		r.Wake()
	}
}

func (r *Relay) waitWake(ctx context.Context) {
	t := time.NewTimer(r.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-r.wake:
	case <-t.C:
	}
}

// currentSettings re-reads relay_settings at most twice per poll interval; on
// error it keeps the last known settings.
func (r *Relay) currentSettings(ctx context.Context) RelaySettings {
	if time.Since(r.settingAt) < r.cfg.PollInterval/2 {
		return r.settings
	}
	s, err := RelaySettingsGet(ctx, r.pool)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("read relay settings", "error", err)
		}
		return r.settings
	}
	r.settings, r.settingAt = s, time.Now()
	return s
}

func (r *Relay) loop(ctx context.Context) {
	limiter := rate.NewLimiter(rate.Inf, 1)
	for ctx.Err() == nil {
		if down, err := r.readOnly.standingDown(ctx, r.pool); down || err != nil {
			if err != nil && ctx.Err() == nil {
				r.log.Warn("relay standing down", "error", err)
			}
			_ = sleepCtx(ctx, r.cfg.PollInterval)
			continue
		}
		s := r.currentSettings(ctx)
		if s.Paused {
			r.waitWake(ctx)
			continue
		}
		batch := r.cfg.BatchSize
		if s.BatchSize != nil {
			batch = *s.BatchSize
		}
		if s.RatePerSecond != nil {
			limiter.SetLimit(rate.Limit(*s.RatePerSecond))
			// A throttled batch must still finish inside its lease.
			batch = min(batch, max(1, int(*s.RatePerSecond*r.cfg.LeaseDuration.Seconds()/2)))
		} else {
			limiter.SetLimit(rate.Inf)
		}
		if time.Since(r.reclaimAt) >= r.cfg.PollInterval {
			r.reclaimExpired(ctx)
			r.reclaimAt = time.Now()
		}
		n, err := r.runBatch(ctx, batch, limiter)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !r.readOnly.refused(err) {
				r.log.Warn("relay batch failed", "error", err)
			}
			_ = sleepCtx(ctx, r.cfg.PollInterval)
			continue
		}
		if n < batch {
			r.waitWake(ctx)
		}
	}
}

func (r *Relay) reclaimExpired(ctx context.Context) {
	type reclaimed struct {
		ID    int64  `db:"id"`
		State string `db:"state"`
	}
	got, err := sqlset.All[reclaimed](ctx, r.pool, sqlText("outbox_reclaim_expired"), 1000)
	if err != nil {
		if ctx.Err() == nil && !r.readOnly.refused(err) {
			r.log.Warn("reclaim expired relay leases", "error", err)
		}
		return
	}
	for _, g := range got {
		r.metrics.reclaimed.Inc()
		if g.State == OutboxDead {
			r.metrics.dead.Inc()
		}
	}
	if len(got) > 0 {
		r.log.Info("reclaimed expired relay leases", "events", len(got))
	}
}

// runBatch claims up to n events and carries them through publish, accept
// and mark. It returns how many it claimed.
func (r *Relay) runBatch(ctx context.Context, n int, limiter *rate.Limiter) (int, error) {
	// The lease runs from no earlier than now: the claim sets it from the
	// server's clock when the statement runs.
	leaseUntil := time.Now().Add(r.cfg.LeaseDuration)
	rows, err := r.pool.Query(ctx, sqlText("outbox_claim"), n, r.cfg.ID, r.cfg.LeaseDuration.Milliseconds())
	if err != nil {
		return 0, fmt.Errorf("claim outbox events: %w", err)
	}
	msgs, err := pgx.CollectRows(rows, pgx.RowToAddrOfStructByName[OutboxMessage])
	if err != nil {
		return 0, fmt.Errorf("claim outbox events: %w", err)
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	start := time.Now()
	r.metrics.claimed.Add(float64(len(msgs)))
	if r.hooks.beforePublish != nil {
		r.hooks.beforePublish(msgs)
	}

	// Publishes that started run to completion even when the relay is
	// stopping: the broker may accept them, and the mark should follow.
	detached := context.WithoutCancel(ctx)
	errs := make([]error, len(msgs))
	started := make([]bool, len(msgs))
	sem := make(chan struct{}, r.cfg.Concurrency)
	var wg sync.WaitGroup
	var leaseErr error
	for i, m := range msgs {
		if ctx.Err() != nil || limiter.Wait(ctx) != nil {
			break
		}
		sem <- struct{}{}
		if leaseUntil, leaseErr = r.leaseFor(ctx, msgs, leaseUntil); leaseErr != nil {
			<-sem
			break
		}
		started[i] = true
		r.metrics.attempts.Inc()
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			pctx, cancel := context.WithTimeout(detached, r.cfg.PublishTimeout)
			defer cancel()
			t := time.Now()
			errs[i] = r.publish(pctx, m)
			r.metrics.publishSeconds.Observe(time.Since(t).Seconds())
		}()
	}
	wg.Wait()

	var ok, failed, unstarted []*OutboxMessage
	for i, m := range msgs {
		switch {
		case !started[i]:
			unstarted = append(unstarted, m)
		case errs[i] == nil:
			ok = append(ok, m)
		default:
			failed = append(failed, m)
		}
	}
	dbctx, cancel := context.WithTimeout(detached, r.cfg.PublishTimeout)
	defer cancel()
	firstErr := leaseErr
	if len(ok) > 0 {
		if err := r.markAccepted(dbctx, ok); err != nil {
			firstErr = err
		}
		if r.hooks.afterPublish != nil {
			r.hooks.afterPublish(ok)
		}
		marked, err := r.markPublished(dbctx, ok)
		if err != nil {
			r.metrics.markFailures.Add(float64(len(ok)))
			firstErr = firstError(firstErr, err)
		} else {
			r.metrics.published.Add(float64(marked))
			r.metrics.staleMarks.Add(float64(len(ok) - marked))
		}
		if r.hooks.afterMark != nil {
			r.hooks.afterMark(ok)
		}
	}
	if len(failed) > 0 {
		firstErr = firstError(firstErr, r.reschedule(dbctx, failed, errs, msgs))
	}
	if len(unstarted) > 0 {
		ids, gens := idsAndGenerations(unstarted)
		if _, err := r.pool.Exec(dbctx, sqlText("outbox_release"), r.cfg.ID, ids, gens); err != nil {
			firstErr = firstError(firstErr, fmt.Errorf("release unstarted outbox events: %w", err))
		}
	}
	r.metrics.batchSeconds.Observe(time.Since(start).Seconds())
	return len(msgs), firstErr
}

// errLeaseLost says a batch's lease renewal matched fewer events than the
// batch holds: another relay reclaimed some, so this one starts no more.
var errLeaseLost = errors.New("relay lease lost: another relay reclaimed events of this batch")

// leaseFor returns the lease of the batch msgs (held until leaseUntil) once
// it covers one more publish: PublishTimeout, then a tenth of the lease for
// the mark. It renews the lease of the whole batch, fenced, when too little
// is left. An error means no publish may start: the renewal failed or
// another relay took events over; the rest is left for the next claim.
func (r *Relay) leaseFor(ctx context.Context, msgs []*OutboxMessage, leaseUntil time.Time) (time.Time, error) {
	need := r.cfg.PublishTimeout + r.cfg.LeaseDuration/10
	if time.Until(leaseUntil) >= need {
		return leaseUntil, nil
	}
	renewed := time.Now().Add(r.cfg.LeaseDuration)
	ids, gens := idsAndGenerations(msgs)
	rctx, cancel := context.WithTimeout(ctx, max(time.Until(leaseUntil), r.cfg.LeaseDuration/10))
	defer cancel()
	tag, err := r.pool.Exec(rctx, sqlText("outbox_renew"), r.cfg.ID, ids, gens, r.cfg.LeaseDuration.Milliseconds())
	if err != nil {
		return leaseUntil, fmt.Errorf("renew the relay lease of %d events: %w", len(msgs), err)
	}
	if int(tag.RowsAffected()) < len(msgs) {
		return leaseUntil, fmt.Errorf("renew the relay lease of %d events (%d still held): %w", len(msgs), tag.RowsAffected(), errLeaseLost)
	}
	r.metrics.renewals.Inc()
	return renewed, nil
}

func firstError(first, next error) error {
	if first != nil {
		return first
	}
	return next
}

func (r *Relay) publish(ctx context.Context, m *OutboxMessage) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("publisher panic: %v", p)
		}
	}()
	return r.cfg.Publisher.Publish(ctx, m)
}

func idsAndGenerations(ms []*OutboxMessage) ([]int64, []int64) {
	ids := make([]int64, len(ms))
	gens := make([]int64, len(ms))
	for i, m := range ms {
		ids[i], gens[i] = m.ID, m.Generation
	}
	return ids, gens
}

func (r *Relay) markAccepted(ctx context.Context, ms []*OutboxMessage) error {
	ids, gens := idsAndGenerations(ms)
	if _, err := r.pool.Exec(ctx, sqlText("outbox_mark_accepted"), r.cfg.ID, ids, gens); err != nil {
		return fmt.Errorf("record broker acceptance of %d events: %w", len(ms), err)
	}
	return nil
}

func (r *Relay) markPublished(ctx context.Context, ms []*OutboxMessage) (int, error) {
	ids, gens := idsAndGenerations(ms)
	tag, err := r.pool.Exec(ctx, sqlText("outbox_mark_published"), r.cfg.ID, ids, gens)
	if err != nil {
		return 0, fmt.Errorf("mark %d events published: %w", len(ms), err)
	}
	return int(tag.RowsAffected()), nil
}

func (r *Relay) reschedule(ctx context.Context, failed []*OutboxMessage, errs []error, all []*OutboxMessage) error {
	errOf := make(map[int64]error, len(failed))
	for i, m := range all {
		if errs[i] != nil {
			errOf[m.ID] = errs[i]
		}
	}
	ids, gens := idsAndGenerations(failed)
	delays := make([]int64, len(failed))
	texts := make([]string, len(failed))
	final := make([]bool, len(failed))
	for i, m := range failed {
		delays[i] = r.backoff(m.Attempt).Milliseconds()
		texts[i] = errOf[m.ID].Error()
		final[i] = IsPermanent(errOf[m.ID])
		r.log.Debug("publish failed", "event_id", m.ID, "attempt", m.Attempt, "error", errOf[m.ID])
	}
	r.metrics.failures.Add(float64(len(failed)))
	rows, err := r.pool.Query(ctx, sqlText("outbox_reschedule"), r.cfg.ID, ids, gens, delays, texts, r.cfg.MaxAttempts, final)
	if err != nil {
		return fmt.Errorf("reschedule %d failed events: %w", len(failed), err)
	}
	states, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var id int64
		var st string
		err := row.Scan(&id, &st)
		return st, err
	})
	if err != nil {
		return fmt.Errorf("reschedule %d failed events: %w", len(failed), err)
	}
	for _, st := range states {
		if st == OutboxDead {
			r.metrics.dead.Inc()
		}
	}
	return nil
}

// backoff is the shared capped exponential backoff with full jitter.
func (r *Relay) backoff(attempt int) time.Duration {
	return Backoff(attempt, r.cfg.BackoffBase, r.cfg.BackoffMax)
}
