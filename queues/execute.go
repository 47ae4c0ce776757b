package queues

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"
)

// startJobs runs the jobs of one claim; their slots were reserved by the
// fetcher and each is freed when its attempt's outcome is written.
//
// A goroutine per job costs its creation and a trip through the scheduler,
// a fifth of the engine's CPU per job when handlers return at once. So a
// claim's jobs are taken in claim order by a few runner goroutines, each
// running one job after another. A handler that blocks must not hold back
// the jobs behind it: every job of the claim has started within
// claimStartWait of the claim, or the jobs still waiting get a goroutine of
// their own each, as they do for a single job and while the queue recently
// had such a claim (spreadHold).
func (c *Client) startJobs(q *queueRunner, jobs []Job, sent time.Time) {
	prepared := c.prepareJobs(q, jobs, sent)
	if len(jobs) == 1 || time.Now().UnixNano() < q.spreadUntil.Load() {
		for _, jc := range prepared {
			go c.execJob(q, jc)
		}
		return
	}
	r := &claimRun{c: c, q: q, jobs: prepared}
	r.watchdog = time.AfterFunc(c.claimStartWait, r.spread)
	for range min(len(jobs), claimRunners()) {
		go r.run()
	}
}

// claimStartWait is how long a claimed job may wait for a runner. When the
// handlers return at once, the runners take a claim of 1,000 jobs in about
// a millisecond (2 ms at the 90th percentile on a busy 2-core machine).
const claimStartWait = 5 * time.Millisecond

// spreadHold is how long a queue whose claim outlasted claimStartWait runs
// each job on a goroutine of its own: its handlers block, or take long.
const spreadHold = time.Second

// claimRunners is how many runners share a claim's jobs: one per processor
// Go schedules on.
func claimRunners() int { return runtime.GOMAXPROCS(0) }

// claimRun is a claim's jobs shared by its runners: each takes the next job
// not yet taken.
type claimRun struct {
	c        *Client
	q        *queueRunner
	jobs     []*jobContext
	next     atomic.Int64
	watchdog *time.Timer
}

// take takes the next job, or nil when every job is taken.
func (r *claimRun) take() *jobContext {
	i := r.next.Add(1) - 1
	if i >= int64(len(r.jobs)) {
		return nil
	}
	return r.jobs[i]
}

// run is one runner: it runs jobs until none is left to take.
func (r *claimRun) run() {
	for jc := r.take(); jc != nil; jc = r.take() {
		r.c.execJob(r.q, jc)
	}
	r.watchdog.Stop()
}

// spread starts each job not yet taken on a goroutine of its own; the
// watchdog runs it Client.claimStartWait after the claim.
func (r *claimRun) spread() {
	jc := r.take()
	if jc == nil {
		return
	}
	r.q.spreadUntil.Store(time.Now().Add(spreadHold).UnixNano())
	for ; jc != nil; jc = r.take() {
		go r.c.execJob(r.q, jc)
	}
}

// prepareJobs registers a claim's jobs as running (their cancel functions
// for the heartbeat, the lease watch and Stop, their slots in the metrics
// and the drain), under one lock for the claim, before their handlers are
// called. sent is when the claim statement was sent: their local lease
// deadline counts from it.
func (c *Client) prepareJobs(q *queueRunner, jobs []Job, sent time.Time) []*jobContext {
	prepared := make([]*jobContext, len(jobs))
	deadline := int64(leaseDeadline(sent.Sub(c.epoch), c.cfg.LeaseDuration))
	c.mu.Lock()
	for i := range jobs {
		job := &jobs[i]
		ctx, cancel := context.WithCancelCause(context.Background()) // cancelled by cancelRunning
		jc := &jobContext{Context: ctx, job: job, cancel: cancel, client: c}
		jc.deadline.Store(deadline)
		jc.session.pool, jc.session.jobID, jc.session.pooled = c.pool, job.ID, c.cfg.TransactionPooler
		jc.slot = c.running.add(runningJob{id: job.ID, generation: job.LeaseGeneration, cancel: cancel, jc: jc})
		prepared[i] = jc
	}
	c.mu.Unlock()
	q.m.inFlight.Add(float64(len(jobs)))
	c.jobsWG.Add(len(jobs))
	return prepared
}

// execJob runs a prepared job and, unless its ack was queued (the ack
// loop finishes it then), finishes it.
func (c *Client) execJob(q *queueRunner, jc *jobContext) {
	if c.runJob(jc, q) {
		return
	}
	c.finishJob(q, jc.job.ID, jc.slot, jc.cancel)
}

// jobContext is a running job's context: its cancellable context and its
// cancel function, with the job and its session (JobConn) beside it in one
// allocation rather than a value context and a session each on their own.
// The job is the claim's own (its slice of jobs stays alive until the last
// of them ends), not a copy: a copy was a quarter of the bytes allocated
// per job. Contexts derived from it attach to the embedded cancellable
// context directly (Value passes the context package's own keys through),
// so they start no goroutine of their own.
type jobContext struct {
	context.Context
	job     *Job
	cancel  context.CancelCauseFunc
	slot    int // in Client.running
	session jobSession
	client  *Client
	// deadline is the job's local lease deadline (Client.clock), set at
	// the claim and moved by each renewal that held the job.
	deadline atomic.Int64
	// leaseExpired is set, under Client.mu, when leaseWatch cancelled the
	// handler at the deadline.
	leaseExpired bool
	// completed is set by JobCompleteTx: the handler's transaction marks
	// the job done, so the engine acks nothing.
	completed atomic.Bool
}

// Value answers the session key with the job's session and the job key
// with the job's context.
func (jc *jobContext) Value(key any) any {
	switch key.(type) {
	case sessionKey:
		return &jc.session
	case jobKey:
		return jc
	}
	return jc.Context.Value(key)
}

// finishJob ends an attempt whose outcome is written (or given up on): its
// context, its entry in the heartbeat's set, its slot and its count in the
// drain.
func (c *Client) finishJob(q *queueRunner, id int64, slot int, cancel context.CancelCauseFunc) {
	cancel(nil)
	c.mu.Lock()
	c.running.remove(slot, id)
	c.mu.Unlock()
	q.outcomeWritten()
	c.jobsWG.Done()
}

// errTimeout is the cause of a handler context cancelled by the queue's
// Timeout.
var errTimeout = errors.New("job timed out")

// errShutdown is the cause of a handler context cancelled at the drain
// deadline of Stop.
var errShutdown = errors.New("worker shutting down")

// runJob runs one attempt and writes its outcome. It returns true when the
// outcome is an ack it queued for the ack loops, which then finish the job;
// otherwise the outcome is written when it returns.
func (c *Client) runJob(jc *jobContext, q *queueRunner) bool {
	job, session := jc.job, &jc.session
	log := jobLog{log: c.log, job: job}
	var ctx context.Context = jc
	if q.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, q.cfg.Timeout, errTimeout)
		defer cancel()
	}

	var err error
	h := c.handler(job.Kind)
	start := c.clock()
	if h == nil {
		err = fmt.Errorf("no handler registered for kind %q", job.Kind)
	} else {
		err = safeHandler(ctx, h, job)
	}
	end := c.clock()
	q.m.runSeconds.Observe((end - start).Seconds())
	session.release(err == nil && ctx.Err() == nil)
	// The slot is free as soon as the handler returns; the outcome write
	// below is bounded separately (queueRunner.writing), and the job stays
	// leased (and heartbeated) until it is written.
	q.m.inFlight.Dec()
	q.handlerReturned()

	cause := context.Cause(ctx)
	switch {
	case err == nil && jc.completed.Load():
		// The handler's own transaction marked the job done (JobCompleteTx),
		// fenced there: there is nothing left to ack, whatever the heartbeat
		// or the lease watch made of the job since.
		q.m.done.Inc()
		return false
	case errors.Is(cause, ErrLeaseDeadline):
		c.metrics.leaseLost.WithLabelValues(q.name, "local_deadline").Inc()
		if err == nil {
			// The handler finished all the same: its ack, fenced, tells
			// whether the lease still held in the database.
			break
		}
		c.metrics.finished.WithLabelValues(q.name, "lease_lost").Inc()
		log.Warn("lease deadline passed without a renewal reaching the database; handler cancelled, result discarded "+
			"(the job runs again once the database reaps its lease)", "err", err)
		return false
	case errors.Is(cause, ErrLeaseLost):
		// Cancelled by the heartbeat: someone else owns the job now.
		c.metrics.leaseLost.WithLabelValues(q.name, "renew_refused").Inc()
		if err == nil {
			// The handler finished all the same: it ran and its ack is
			// lost, as when the ack itself is refused; the ack, fenced,
			// is refused and counts it so (ack_failed, a stale ack),
			// whichever of the heartbeat and the ack saw the loss first.
			break
		}
		c.metrics.staleAcks.WithLabelValues(q.name).Inc()
		c.metrics.finished.WithLabelValues(q.name, "lease_lost").Inc()
		log.Warn("lease lost while running; result discarded", "err", err)
		return false
	case err != nil && errors.Is(cause, errShutdown) && errors.Is(err, context.Canceled):
		c.release(q, job, log)
		return false
	}
	if errors.Is(err, ErrNoConnection) && ctx.Err() == nil {
		c.postpone(q, job, err, log)
		return false
	}
	if err == nil {
		c.acks.queue(ackRequest{q: q, job: job, id: job.ID, generation: job.LeaseGeneration,
			cancel: jc.cancel, slot: jc.slot, start: end})
		return true
	}
	var pe *panicError
	if errors.As(err, &pe) {
		c.metrics.panics.WithLabelValues(q.name).Inc()
		log.Error("handler panicked", "panic", pe.value)
	}
	class := ErrorClass(err)
	if errors.Is(cause, errTimeout) && errors.Is(err, context.DeadlineExceeded) {
		class = "timeout"
		err = fmt.Errorf("%w after %s: %w", errTimeout, q.cfg.Timeout, err)
	}
	c.fail(q, job, err, class, log)
	return false
}

// outcomeCtx is the context outcomes are written with: not the handler's
// (which may be cancelled) so that a finished job is still acked, bounded so
// a dead database cannot hold the slot longer than the lease.
func (c *Client) outcomeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), max(c.cfg.LeaseDuration, 5*time.Second))
}

// retryOutcome runs write until it succeeds, the lease is lost, or the
// outcome context ends, backing off between database errors.
func (c *Client) retryOutcome(ctx context.Context, write func(context.Context) error) error {
	delay := 20 * time.Millisecond
	for i := 0; ; i++ {
		err := write(ctx)
		if err == nil || errors.Is(err, ErrLeaseLost) || i >= 50 {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// jobLog writes a job's log lines with its attributes, which it builds only
// for a line that is written: most jobs write none.
type jobLog struct {
	log *slog.Logger
	job *Job
}

func (l jobLog) Warn(msg string, args ...any)  { l.write(slog.LevelWarn, msg, args) }
func (l jobLog) Error(msg string, args ...any) { l.write(slog.LevelError, msg, args) }

func (l jobLog) write(level slog.Level, msg string, args []any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	l.log.With("queue", l.job.Queue, "job", l.job.ID, "kind", l.job.Kind, "attempt", l.job.Attempts).
		Log(context.Background(), level, msg, args...)
}

func (c *Client) fail(q *queueRunner, job *Job, jobErr error, class string, log jobLog) {
	permanent := IsPermanent(jobErr)
	delay := time.Duration(0)
	if !permanent && job.Attempts < job.MaxAttempts {
		delay = c.retryDelay(job.Attempts)
	}
	ctx, cancel := c.outcomeCtx()
	defer cancel()
	var status string
	err := c.retryOutcome(ctx, func(ctx context.Context) error {
		var err error
		status, err = JobFail(ctx, c.pool, JobFailParams{
			ID: job.ID, Owner: c.cfg.ID, Generation: job.LeaseGeneration, Err: jobErr, Class: class,
			Delay: delay, Permanent: permanent, MaxErrors: c.cfg.MaxErrors,
		})
		return err
	})
	switch {
	case errors.Is(err, ErrLeaseLost):
		c.metrics.staleAcks.WithLabelValues(q.name).Inc()
		c.metrics.finished.WithLabelValues(q.name, "lease_lost").Inc()
		log.Warn("stale fail refused: lease lost", "err", jobErr)
	case err != nil:
		c.errs.note("fail", err)
		log.Error("recording a failed attempt failed; the lease will expire", "err", err, "job_err", jobErr)
	case status == StatusDead:
		c.metrics.deadLetters.WithLabelValues(q.name).Inc()
		c.metrics.finished.WithLabelValues(q.name, "dead").Inc()
		log.Warn("job dead-lettered", "err", jobErr, "class", class, "permanent", permanent)
	default:
		c.metrics.retries.WithLabelValues(q.name).Inc()
		c.metrics.finished.WithLabelValues(q.name, "retried").Inc()
		log.Warn("job failed; will retry", "err", jobErr, "class", class, "retry_in", delay)
	}
}

// postponeDelay is how long a job that could not get a database connection
// waits before it is claimed again: long enough not to spin on a full
// server, short enough that the queue resumes within a second or two of it
// taking connections again.
const postponeDelay = time.Second

// postpone hands back a job whose handler could not get a database
// connection (ErrNoConnection): its attempt is taken back and it is due
// again after postponeDelay. A full server must not burn a job's retries.
func (c *Client) postpone(q *queueRunner, job *Job, jobErr error, log jobLog) {
	ctx, cancel := c.outcomeCtx()
	defer cancel()
	err := c.retryOutcome(ctx, func(ctx context.Context) error {
		return JobPostpone(ctx, c.pool, job.ID, c.cfg.ID, job.LeaseGeneration, postponeDelay)
	})
	switch {
	case errors.Is(err, ErrLeaseLost):
		c.metrics.staleAcks.WithLabelValues(q.name).Inc()
		c.metrics.finished.WithLabelValues(q.name, "lease_lost").Inc()
	case err != nil:
		c.errs.note("postpone", err)
		log.Error("handing back a job that got no connection failed; the lease will expire", "err", err, "job_err", jobErr)
	default:
		c.metrics.finished.WithLabelValues(q.name, "no_connection").Inc()
		log.Warn("no database connection for the job; handed back without spending an attempt", "err", jobErr, "retry_in", postponeDelay)
	}
}

// release hands back a job interrupted by shutdown (its attempt counted).
func (c *Client) release(q *queueRunner, job *Job, log jobLog) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := JobRelease(ctx, c.pool, job.ID, c.cfg.ID, job.LeaseGeneration, false); err != nil {
		log.Warn("release interrupted job", "err", err)
		return
	}
	c.mu.Lock()
	c.interrupted = append(c.interrupted, job.ID)
	c.mu.Unlock()
	c.metrics.finished.WithLabelValues(q.name, "released").Inc()
}
