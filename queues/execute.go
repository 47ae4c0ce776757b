package queues

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// startJob runs one claimed job in its own goroutine; the slot was reserved
// by the fetcher and is freed when the attempt's outcome is written.
func (c *Client) startJob(q *queueRunner, job Job) {
	ctx, cancel := context.WithCancelCause(c.jobsCtx)
	c.mu.Lock()
	c.running[job.ID] = &runningJob{queue: q.name, generation: job.LeaseGeneration, cancel: cancel}
	c.mu.Unlock()
	c.metrics.inFlight.WithLabelValues(q.name).Inc()
	c.jobsWG.Add(1)
	go func() {
		defer c.jobsWG.Done()
		defer q.outcomeWritten()
		defer cancel(nil)
		c.runJob(ctx, q, &job)
		c.mu.Lock()
		delete(c.running, job.ID)
		c.mu.Unlock()
	}()
}

// errTimeout is the cause of a handler context cancelled by the queue's
// Timeout.
var errTimeout = errors.New("job timed out")

// errShutdown is the cause of a handler context cancelled at the drain
// deadline of Stop.
var errShutdown = errors.New("worker shutting down")

func (c *Client) runJob(ctx context.Context, q *queueRunner, job *Job) {
	log := jobLog{log: c.log, job: job}
	if q.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, q.cfg.Timeout, errTimeout)
		defer cancel()
	}
	session := &jobSession{pool: c.pool, jobID: job.ID}
	ctx = context.WithValue(ctx, sessionKey{}, session)

	var err error
	h := c.handler(job.Kind)
	start := time.Now()
	if h == nil {
		err = fmt.Errorf("no handler registered for kind %q", job.Kind)
	} else {
		err = safeHandler(ctx, h, job)
	}
	c.metrics.runSeconds.WithLabelValues(q.name).Observe(time.Since(start).Seconds())
	session.release()
	// The slot is free as soon as the handler returns; the outcome write
	// below is bounded separately (queueRunner.writing), and the job stays
	// leased (and heartbeated) until it is written.
	c.metrics.inFlight.WithLabelValues(q.name).Dec()
	q.handlerReturned()

	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrLeaseLost):
		// Cancelled by the heartbeat: someone else owns the job now.
		c.metrics.staleAcks.WithLabelValues(q.name).Inc()
		c.metrics.finished.WithLabelValues(q.name, "lease_lost").Inc()
		log.Warn("lease lost while running; result discarded", "err", err)
		return
	case err != nil && errors.Is(cause, errShutdown) && errors.Is(err, context.Canceled):
		c.release(q, job, log)
		return
	}
	if err == nil {
		c.ack(q, job, log)
		return
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

func (c *Client) ack(q *queueRunner, job *Job, log jobLog) {
	start := time.Now()
	err := c.ackBatched(job.ID, job.LeaseGeneration)
	switch {
	case errors.Is(err, ErrLeaseLost):
		c.metrics.staleAcks.WithLabelValues(q.name).Inc()
		c.metrics.finished.WithLabelValues(q.name, "lease_lost").Inc()
		log.Warn("stale ack refused: lease lost before the ack")
	case err != nil:
		log.Error("ack failed; the job will run again after its lease expires", "err", err)
	default:
		c.metrics.ackSeconds.WithLabelValues(q.name).Observe(time.Since(start).Seconds())
		c.metrics.finished.WithLabelValues(q.name, "done").Inc()
	}
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

// release hands back a job interrupted by shutdown (its attempt counted).
func (c *Client) release(q *queueRunner, job *Job, log jobLog) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := JobRelease(ctx, c.pool, job.ID, c.cfg.ID, job.LeaseGeneration, false); err != nil {
		log.Warn("release interrupted job", "err", err)
		return
	}
	c.metrics.finished.WithLabelValues(q.name, "released").Inc()
}

// ackRequest is one finished job waiting for the batched ack.
type ackRequest struct {
	id, generation int64
	res            chan error // capacity 1; always answered by ackLoop
}

// ackBatched acks through ackLoop, which folds the acks that arrive while a
// statement runs into the next one. After the acker stopped (only handlers
// that outlived Stop get here) it acks directly.
func (c *Client) ackBatched(id, generation int64) error {
	req := ackRequest{id: id, generation: generation, res: make(chan error, 1)}
	select {
	case c.acks <- req:
		return <-req.res
	case <-c.ackerDone:
		ctx, cancel := c.outcomeCtx()
		defer cancel()
		return c.retryOutcome(ctx, func(ctx context.Context) error {
			return JobAck(ctx, c.pool, id, c.cfg.ID, generation)
		})
	}
}

// ackLoop is one of AckConcurrency receivers of the acks channel: it takes
// what is waiting (up to 1,000) and acks it in one statement, while the
// others collect the next batch. Every request it receives is answered
// before it exits.
func (c *Client) ackLoop() {
	const maxBatch = 1000
	for {
		var batch []ackRequest
		select {
		case <-c.stopAcker:
			return
		case r := <-c.acks:
			batch = append(batch, r)
		}
	more:
		for len(batch) < maxBatch {
			select {
			case r := <-c.acks:
				batch = append(batch, r)
			default:
				break more
			}
		}
		ids := make([]int64, len(batch))
		gens := make([]int64, len(batch))
		for i, r := range batch {
			ids[i], gens[i] = r.id, r.generation
		}
		ctx, cancel := c.outcomeCtx()
		var acked []int64
		err := c.retryOutcome(ctx, func(ctx context.Context) error {
			var err error
			acked, err = JobAckMany(ctx, c.pool, c.cfg.ID, ids, gens)
			return err
		})
		cancel()
		ok := make(map[int64]bool, len(acked))
		for _, id := range acked {
			ok[id] = true
		}
		for _, r := range batch {
			switch {
			case err != nil:
				r.res <- err
			case ok[r.id]:
				r.res <- nil
			default:
				r.res <- fmt.Errorf("ack job %d: %w", r.id, ErrLeaseLost)
			}
		}
	}
}
