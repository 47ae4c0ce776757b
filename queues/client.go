package queues

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// HandlerFunc runs one attempt of a job. Returning nil acks the job; an
// error fails the attempt (retried with backoff, or dead when attempts are
// spent or the error is wrapped with Permanent); a panic fails it with
// error class "panic". ctx is cancelled when the queue's Timeout passes,
// when the lease is lost (an operator cancelled the job or the lease
// expired: cause ErrLeaseLost) and at the end of a graceful shutdown's
// drain; handlers must return promptly then. The lease is lost on the
// worker's own clock too: when no renewal has reached the database for
// the lease less a tenth (LeaseDeadline), ctx is cancelled with cause
// ErrLeaseDeadline even though the database cannot be reached, so a
// handler cut off from it stops before another worker may take its job.
// JobConn(ctx) gives the job's own tagged session; JobCompleteTx commits
// the handler's own writes and the job's completion in one transaction.
//
// A job may run more than once: after a lost lease, and after a handler
// that returned nil whose ack was not written (counted as ack_failed in
// queues_jobs_finished_total). Its effects must be idempotent: write them
// with JobCompleteTx in the transaction that completes the job, or key
// them by job id (or an idempotency key, see the inbox) so that a second
// run finds them done.
type HandlerFunc func(ctx context.Context, job *Job) error

// QueueConfig configures one queue a Client works.
type QueueConfig struct {
	// Concurrency is how many jobs of the queue this process runs at once
	// (default 10). queue_settings.max_workers can lower the fleet-wide
	// total below the sum of the processes' concurrency.
	Concurrency int
	// Timeout bounds one attempt; the handler's ctx is cancelled after it
	// and the attempt fails with class "timeout". Zero means no timeout.
	Timeout time.Duration
}

// ClientConfig configures a Client. Zero values get the documented defaults.
type ClientConfig struct {
	// Queues to work, by name. A Client with no queues only enqueues.
	Queues map[string]QueueConfig
	// PollInterval is how often idle queues are polled and queue_settings,
	// the workers row and the reaper are refreshed (default 1s). NOTIFY
	// wakes fetchers sooner; polling is the truth.
	PollInterval time.Duration
	// LeaseDuration is how long a claim holds a job before other processes
	// may take it over (default 30s). Running jobs are renewed every third
	// of it, so it only has to cover a process stall, not a long job.
	LeaseDuration time.Duration
	// ID names this process in lease_owner and the workers registry
	// (default host:pid:random).
	ID string
	// Version is recorded in the workers registry.
	Version string
	// Registerer receives the engine's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Logger defaults to discarding.
	Logger *slog.Logger
	// RetryBase and RetryMax shape the retry backoff (defaults 1s and 10m):
	// full jitter over base*2^(attempt-1), capped.
	RetryBase, RetryMax time.Duration
	// RetryDelayFunc, when set, replaces the backoff; attempt is the
	// attempt that failed (1 for the first).
	RetryDelayFunc func(attempt int) time.Duration
	// MaxErrors bounds each job's errors history (default 20 entries).
	MaxErrors int
	// MaxClaim bounds one claim statement (default 100 jobs).
	MaxClaim int
	// ClaimConcurrency is how many claim statements one queue may have in
	// flight while it has a backlog (default 2); an idle queue claims one
	// at a time.
	ClaimConcurrency int
	// AckConcurrency is how many batched ack statements may be in flight
	// (default 2). Acks that arrive while they run wait for the next one.
	AckConcurrency int
	// ClaimRescan bounds how long a queue's claims resume after the last
	// job they took before one starts from the head of the queue again
	// (default 1s, and after every claim that came back short while the
	// head is about as cheap to claim from as the cursor). It bounds how
	// long a job that commits behind that cursor waits: a job of a higher
	// priority than the one being worked, or one whose inserting
	// transaction ran longer than the claims it overlapped. One rescan runs
	// at a time, and the next waits at least 20 times as long as the
	// cheapest of the last three claims from the head took: behind a
	// pinned xmin horizon a claim from the head walks every job claimed
	// since, short claims keep the cursor, and the wait stretches with it.
	ClaimRescan time.Duration
	// FetchCooldown is how long a fetcher woken by a freed slot waits for
	// more slots to free up (up to half the queue's concurrency) before it
	// claims, so that a backlog is claimed in batches (default 5ms; negative
	// disables). Wake-ups by NOTIFY on an idle queue claim at once.
	FetchCooldown time.Duration
	// ReapBatch bounds one reaper statement (default 500 jobs); the reaper
	// runs once per poll interval, at most 10 batches a time.
	ReapBatch int
	// DisableListen turns off LISTEN (for poolers in transaction mode,
	// where LISTEN does not work); wake-ups then come from polling only.
	DisableListen bool
	// TransactionPooler says the pool reaches PostgreSQL through a pooler
	// in transaction mode (PgBouncer pool_mode=transaction; build the pool
	// with ForTransactionPooler): JobConn's connection is then a
	// transaction tagged with SET LOCAL, and without SessionConnConfig
	// LISTEN is off (as with DisableListen) and the worker records no
	// session, so a dead worker's jobs come back when their leases expire
	// instead of at once.
	TransactionPooler bool
	// SessionConnConfig, when set, is the connection of the LISTEN session
	// instead of the pool's: a direct connection to PostgreSQL beside a
	// pool behind a transaction pooler. That session also proves the
	// worker alive (see WorkerDeadFind). nil: the pool's settings.
	SessionConnConfig *pgx.ConnConfig
	// ShutdownGrace is how long Stop waits for handlers to return after
	// their contexts were cancelled at the drain deadline (default 5s).
	ShutdownGrace time.Duration
}

// Client enqueues jobs and, once started, works the configured queues with
// bounded concurrency. It does not own the pool: the caller closes it after
// Stop returns (the last step of a graceful shutdown).
//
// The pool should give connections application_name "console-worker" (see
// PoolConfig); while a handler uses JobConn, that session's
// application_name is "console-worker job=<id>", so pg_stat_activity shows
// which backend runs which job. Size the pool for ClaimConcurrency
// connections per queue plus AckConcurrency plus two (heartbeat,
// maintenance) plus one per running job that calls JobConn; LISTEN uses
// its own connection outside the pool. A smaller pool works, with claims
// and acks waiting for each other.
type Client struct {
	// epoch is when the Client was built: clock measures from it.
	epoch    time.Time
	pool     *pgxpool.Pool
	cfg      ClientConfig
	log      *slog.Logger
	metrics  *metrics
	queues   map[string]*queueRunner
	names    []string
	host     string
	liveness time.Duration
	// listenStable is how long a LISTEN session must stay up for the next
	// reconnect to wait listenRetryMin again (listenStableAfter; tests
	// shorten it before Start).
	listenStable time.Duration
	// relisten asks the listener for a new session (sessionRefused);
	// relistenAt is when it last did, read and written by the maintenance
	// loop only.
	relisten   chan struct{}
	relistenAt time.Time
	// claimStartWait bounds how long a claimed job waits for one of its
	// claim's runners (startJobs; tests change it before Start).
	claimStartWait time.Duration

	hmu      sync.RWMutex // handlers: read for every job
	handlers map[string]HandlerFunc

	mu      sync.Mutex
	state   clientState
	running runningSet
	// interrupted lists the jobs the drain deadline cut short that were
	// released back to ready (written only while Stop drains).
	interrupted []int64

	claimCtx   context.Context // fetchers, listener, maintenance
	stopClaims context.CancelFunc
	renewCtx   context.Context // lease heartbeat, until the drain ends
	stopRenew  context.CancelFunc
	errs       engineErrors
	// reconcileUntil (unix nanoseconds) is until when the maintenance loop
	// looks for orphan claims: set after claim errors and listener
	// reconnects, long enough for every claim then in flight to age.
	reconcileUntil atomic.Int64
	loops          sync.WaitGroup
	renewWG        sync.WaitGroup
	jobsWG         sync.WaitGroup
	acks           ackPipeline
	// afterClaim, for tests, runs in the claim's goroutine after each claim
	// statement returns: when it was sent and how many jobs it took.
	afterClaim func(sent time.Time, jobs int)
}

// clientState is where a Client is in its life: it starts once and stops
// once.
type clientState int

const (
	clientNew     clientState = iota // built, not started: Start may run
	clientStarted                    // working its queues: Stop may run
	clientStopped                    // stopped (or stopping): neither runs again
)

// clock is the time since the Client was built, read from the monotonic
// clock only: half the cost of time.Now, which reads the wall clock too,
// and the engine times every job (its run and its ack) with it.
func (c *Client) clock() time.Duration { return time.Since(c.epoch) }

// NewClient returns a Client over pool. It runs nothing until Start.
func NewClient(pool *pgxpool.Pool, cfg ClientConfig) (*Client, error) {
	if pool == nil {
		return nil, errors.New("new client: nil pool")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.LeaseDuration < 3*time.Millisecond {
		return nil, errors.New("new client: lease duration too short")
	}
	if cfg.RetryBase <= 0 {
		cfg.RetryBase = DefaultRetryBase
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = DefaultRetryMax
	}
	if cfg.MaxErrors <= 0 {
		cfg.MaxErrors = 20
	}
	if cfg.MaxClaim <= 0 {
		cfg.MaxClaim = 100
	}
	if cfg.ClaimConcurrency <= 0 {
		cfg.ClaimConcurrency = 2
	}
	if cfg.AckConcurrency <= 0 {
		cfg.AckConcurrency = 2
	}
	if cfg.ClaimRescan <= 0 {
		cfg.ClaimRescan = time.Second
	}
	if cfg.FetchCooldown == 0 {
		cfg.FetchCooldown = 5 * time.Millisecond
	}
	if cfg.ReapBatch <= 0 {
		cfg.ReapBatch = 500
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 5 * time.Second
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	if cfg.ID == "" {
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		cfg.ID = host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Client{
		epoch:          time.Now(),
		pool:           pool,
		cfg:            cfg,
		log:            log.With("worker", cfg.ID),
		metrics:        newMetrics(cfg.Registerer),
		queues:         map[string]*queueRunner{},
		host:           host,
		liveness:       max(3*cfg.PollInterval, 10*time.Second),
		listenStable:   listenStableAfter,
		relisten:       make(chan struct{}, 1),
		claimStartWait: claimStartWait,
		handlers:       map[string]HandlerFunc{},
	}
	c.errs.counted = c.metrics.engineErrors
	for name, qc := range cfg.Queues {
		if name == "" {
			return nil, errors.New("new client: empty queue name")
		}
		if qc.Concurrency <= 0 {
			qc.Concurrency = 10
		}
		c.queues[name] = newQueueRunner(name, qc, cfg.MaxClaim)
		c.queues[name].m = c.metrics.forQueue(name)
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	return c, nil
}

// listens reports whether the client keeps a LISTEN session: not when
// disabled, nor behind a transaction pooler without a direct session.
func (c *Client) listens() bool {
	return !c.cfg.DisableListen && (!c.cfg.TransactionPooler || c.cfg.SessionConnConfig != nil)
}

// ID returns the client's worker id (its lease_owner).
func (c *Client) ID() string { return c.cfg.ID }

// Handle registers the handler for jobs of kind, replacing any earlier one.
// Register handlers before Start.
func (c *Client) Handle(kind string, h HandlerFunc) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	c.handlers[kind] = h
}

func (c *Client) handler(kind string) HandlerFunc {
	c.hmu.RLock()
	defer c.hmu.RUnlock()
	return c.handlers[kind]
}

// Enqueue inserts one job on the client's pool (its own transaction).
func (c *Client) Enqueue(ctx context.Context, p EnqueueParams) (*Job, error) {
	j, err := EnqueueTx(ctx, c.pool, p)
	if err == nil {
		c.metrics.enqueued.WithLabelValues(j.Queue).Inc()
	}
	return j, err
}

// EnqueueMany inserts a batch of jobs in one statement on the client's pool.
func (c *Client) EnqueueMany(ctx context.Context, ps []EnqueueParams) ([]int64, error) {
	ids, err := EnqueueManyTx(ctx, c.pool, ps)
	if err == nil {
		for i, id := range ids {
			if id != 0 && i < len(ps) { // 0: skipped by its dedupe key
				c.metrics.enqueued.WithLabelValues(ps[i].Queue).Inc()
			}
		}
	}
	return ids, err
}

// registration is this process's workers row as WorkerRegister and
// WorkerRestore write it: id, host, pid, queues, total concurrency,
// version and heartbeat interval.
func (c *Client) registration() []any {
	total := 0
	for _, q := range c.queues {
		total += q.cfg.Concurrency
	}
	return []any{c.cfg.ID, c.host, os.Getpid(), c.names, total, c.cfg.Version, c.cfg.PollInterval.Milliseconds()}
}

// Start registers the process in the workers registry and starts, per
// queue, a fetcher that claims only as many jobs as it has free slots, plus
// the lease heartbeat, the maintenance loop (settings, registry heartbeat,
// reaper) and the LISTEN wake-up. ctx only bounds the registration: stop
// the client with Stop. A client with queues refuses to start on a pool
// whose transactions do not default to READ COMMITTED
// (RequireReadCommitted).
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != clientNew {
		return errors.New("start client: already started")
	}
	if len(c.queues) > 0 {
		if err := RequireReadCommitted(ctx, c.pool); err != nil {
			return fmt.Errorf("start client: %w", err)
		}
		if _, err := c.pool.Exec(ctx, sqlText("worker_register"), c.registration()...); err != nil {
			return fmt.Errorf("register worker %s: %w", c.cfg.ID, err)
		}
		if err := c.refreshSettings(ctx); err != nil {
			return err
		}
	}
	c.state = clientStarted
	c.claimCtx, c.stopClaims = context.WithCancel(context.Background())
	c.renewCtx, c.stopRenew = context.WithCancel(context.Background())
	if len(c.queues) == 0 {
		c.acks.start(c, 0)
		return nil
	}
	c.acks.start(c, c.cfg.AckConcurrency)
	for _, name := range c.names {
		q := c.queues[name]
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			c.fetchLoop(c.claimCtx, q)
		}()
	}
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		c.maintenanceLoop(c.claimCtx)
	}()
	if c.listens() {
		c.loops.Add(1)
		go func() {
			defer c.loops.Done()
			c.listenLoop(c.claimCtx)
		}()
	}
	c.renewWG.Add(2)
	go func() {
		defer c.renewWG.Done()
		c.renewLoop(c.renewCtx)
	}()
	go func() {
		defer c.renewWG.Done()
		c.leaseWatch(c.renewCtx)
	}()
	c.log.Info("queue client started", "queues", c.names)
	return nil
}

// Stop shuts down gracefully, in order: stop claiming (fetchers, LISTEN,
// maintenance), let running jobs finish until ctx is done, then cancel the
// handlers' contexts and wait up to ShutdownGrace for them; jobs claimed but
// not started and jobs interrupted by the deadline are released back to
// ready. Finally the workers row is marked stopped. It returns ctx's error
// when the drain deadline cut jobs short. The caller closes the pool after.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	if c.state != clientStarted {
		c.mu.Unlock()
		return nil
	}
	c.state = clientStopped
	c.mu.Unlock()

	c.stopClaims()
	c.loops.Wait()

	drained := make(chan struct{})
	go func() {
		c.jobsWG.Wait()
		close(drained)
	}()
	var result error
	select {
	case <-drained:
	case <-ctx.Done():
		running := c.inFlightTotal()
		c.cancelRunning(errShutdown)
		grace := time.NewTimer(c.cfg.ShutdownGrace)
		stuck := 0
		select {
		case <-drained:
		case <-grace.C:
			stuck = c.inFlightTotal()
		}
		grace.Stop()
		c.mu.Lock()
		released := slices.Clone(c.interrupted)
		c.mu.Unlock()
		slices.Sort(released)
		c.log.Warn("drain deadline interrupted jobs", "running_at_deadline", running,
			"released", len(released), "released_ids", released, "still_running", stuck)
		result = &DrainError{Released: released, StillRunning: stuck, err: ctx.Err()}
	}
	c.cancelRunning(errShutdown)
	c.stopRenew()
	c.renewWG.Wait()
	c.acks.close()
	if len(c.queues) > 0 {
		c.markStopped()
	}
	c.log.Info("queue client stopped")
	return result
}

// markStopped writes the workers row's stopped_at, trying three times
// within ten seconds: a row left unmarked reads as a live worker until its
// heartbeat goes stale.
func (c *Client) markStopped() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	for try := 0; try < 3; try++ {
		if _, err = c.heartbeatWorker(ctx, true); err == nil || ctx.Err() != nil {
			break
		}
		c.log.Warn("mark worker stopped, retrying", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil {
		c.log.Warn("mark worker stopped", "err", err)
	}
}

// DrainError is Stop's error when its drain deadline interrupted jobs:
// Released are the ids handed back to ready (they run again elsewhere),
// StillRunning counts the handlers that ignored cancellation, whose leases
// will expire (or whose worker will be found dead).
type DrainError struct {
	Released     []int64
	StillRunning int
	err          error
}

func (e *DrainError) Error() string {
	return fmt.Sprintf("stop: drain deadline passed: %d jobs released, %d still running: %v",
		len(e.Released), e.StillRunning, e.err)
}

// Unwrap returns the drain context's error.
func (e *DrainError) Unwrap() error { return e.err }

// cancelRunning cancels the handler of every running job with cause. Job
// contexts have no cancellable parent: a child registers with its parent
// under the parent's lock, which every job start and end would take.
func (c *Client) cancelRunning(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running.each(func(r runningJob) { r.cancel(cause) })
}

func (c *Client) inFlightTotal() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running.len()
}

// retryDelay is the backoff before the next attempt after attempt failed.
func (c *Client) retryDelay(attempt int) time.Duration {
	if c.cfg.RetryDelayFunc != nil {
		return c.cfg.RetryDelayFunc(attempt)
	}
	return Backoff(attempt, c.cfg.RetryBase, c.cfg.RetryMax)
}

// safeHandler runs h and turns a panic into a *panicError.
func safeHandler(ctx context.Context, h HandlerFunc, job *Job) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r, stack: string(debug.Stack())}
		}
	}()
	return h(ctx, job)
}
