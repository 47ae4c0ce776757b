package queues

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ackRequest is a job whose handler succeeded, waiting for its ack.
type ackRequest struct {
	q              *queueRunner
	job            *Job // for the log line of a refused ack
	id, generation int64
	cancel         context.CancelCauseFunc
	slot           int           // in Client.running
	start          time.Duration // when the handler returned (Client.clock)
}

// maxAckBatch bounds one ack statement.
const maxAckBatch = 1000

// ackParallelMin is how many acks must wait before a second ack statement
// starts beside one being written; fewer wait for it to end and go into
// the next, larger statement.
const ackParallelMin = 100

// ackPipeline writes the acks of a Client's finished jobs. Handlers queue
// their ack and return; AckConcurrency loops fold the acks that arrive
// while a statement runs into the next one (one statement for up to
// maxAckBatch jobs) and finish each job when its ack is written. Once the
// loops have stopped, acks are written one statement each.
type ackPipeline struct {
	c      *Client
	signal chan struct{} // capacity 1: acks are waiting
	stop   chan struct{} // closed by close: drain and exit
	done   chan struct{} // closed when every loop has exited
	active bool          // the loops were started

	mu      sync.Mutex
	pending []ackRequest
	writing int  // ack statements in flight
	closed  bool // the loops stopped: ack directly
}

// start runs loops ack loops; with none, every ack is written directly.
func (a *ackPipeline) start(c *Client, loops int) {
	a.c = c
	a.signal = make(chan struct{}, 1)
	a.stop = make(chan struct{})
	a.done = make(chan struct{})
	if loops == 0 {
		a.closed = true
		close(a.done)
		return
	}
	a.active = true
	var wg sync.WaitGroup
	for range loops {
		wg.Go(a.loop)
	}
	go func() {
		wg.Wait()
		close(a.done)
	}()
}

// close writes every ack queued so far, stops the loops and waits for
// them; later acks are written directly.
func (a *ackPipeline) close() {
	if !a.active {
		return
	}
	close(a.stop)
	<-a.done
}

// queue hands a finished job to the loops; the job's goroutine does not
// wait. After the loops stopped (only handlers that outlived Stop get
// here) it acks directly.
func (a *ackPipeline) queue(r ackRequest) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.direct(r)
		return
	}
	a.pending = append(a.pending, r)
	a.mu.Unlock()
	select {
	case a.signal <- struct{}{}:
	default:
	}
}

// loop is one of the ack writers. Every ack queued before close is
// written before it exits.
func (a *ackPipeline) loop() {
	for {
		closing := false
		select {
		case <-a.signal:
		case <-a.stop:
			closing = true
		}
		for {
			batch := a.take(closing)
			if batch == nil {
				break
			}
			a.write(batch)
			a.mu.Lock()
			a.writing--
			a.mu.Unlock()
		}
		if closing {
			return
		}
	}
}

// take takes the next statement's acks: up to maxAckBatch, whenever no
// other ack statement is being written (one is always in flight while acks
// wait), and beside one only when ackParallelMin wait. Closing takes what
// waits regardless and sends later acks the direct way.
func (a *ackPipeline) take(closing bool) []ackRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	if closing {
		a.closed = true
	}
	n := len(a.pending)
	if n == 0 || (!closing && a.writing > 0 && n < ackParallelMin) {
		return nil
	}
	k := min(n, maxAckBatch)
	batch := make([]ackRequest, k)
	copy(batch, a.pending)
	a.pending = append(a.pending[:0], a.pending[k:]...)
	a.writing++
	if len(a.pending) > 0 {
		select {
		case a.signal <- struct{}{}:
		default:
		}
	}
	return batch
}

// write acks a batch in one statement (retried while the database errs,
// within the outcome deadline) and finishes its jobs.
func (a *ackPipeline) write(batch []ackRequest) {
	c := a.c
	ids := make([]int64, len(batch))
	gens := make([]int64, len(batch))
	for i, r := range batch {
		ids[i], gens[i] = r.id, r.generation
	}
	ctx, cancel := c.outcomeCtx()
	var acked []int64
	interrupted := false // an attempt failed: it may have committed
	err := c.retryOutcome(ctx, func(ctx context.Context) error {
		var err error
		acked, err = JobAckMany(ctx, c.pool, c.cfg.ID, ids, gens)
		interrupted = interrupted || err != nil
		return err
	})
	// The acked ids are among ids: when as many came back, every job was
	// held, and the common case builds no set.
	all := err == nil && len(acked) == len(ids)
	var held map[int64]bool
	if !all {
		held = make(map[int64]bool, len(acked))
		for _, id := range acked {
			held[id] = true
		}
	}
	var unknown error // the jobs not held may have been acked: the check failed
	if err == nil && interrupted && len(acked) < len(ids) {
		unknown = c.confirmAcks(ctx, ids, gens, held)
	}
	cancel()
	now := c.clock()
	for i := range batch {
		err, isHeld := err, all || held[batch[i].id]
		if err == nil && unknown != nil && !isHeld {
			err = unknown
		}
		c.ackResult(&batch[i], err, isHeld, now)
	}
	c.finishAcked(batch)
}

// direct acks one job in a statement of its own.
func (a *ackPipeline) direct(r ackRequest) {
	c := a.c
	ctx, cancel := c.outcomeCtx()
	defer cancel()
	interrupted := false
	err := c.retryOutcome(ctx, func(ctx context.Context) error {
		err := JobAck(ctx, c.pool, r.id, c.cfg.ID, r.generation)
		interrupted = interrupted || (err != nil && !errors.Is(err, ErrLeaseLost))
		return err
	})
	held := err == nil
	if errors.Is(err, ErrLeaseLost) {
		err = nil
		if interrupted {
			m := map[int64]bool{}
			err = c.confirmAcks(ctx, []int64{r.id}, []int64{r.generation}, m)
			held = m[r.id]
		}
	}
	c.acked(&r, err, held)
}

// errAckOutcomeUnknown is an ack whose reply was lost and whose check,
// confirmAcks, failed too: the job is done if the ack committed, and runs
// again after its lease expires if not. Neither a failure nor a lost lease
// can be told.
var errAckOutcomeUnknown = errors.New("ack outcome unknown")

// confirmAcks marks held the jobs among ids that a failed ack attempt did
// ack (its commit went through, its reply was lost): they are done at the
// generation this worker held. Only runs after a failed attempt. An error
// (wrapping errAckOutcomeUnknown) means the check itself failed: the jobs
// it did not mark held may have been acked or not.
func (c *Client) confirmAcks(ctx context.Context, ids, gens []int64, held map[int64]bool) error {
	var missing, missingGens []int64
	for i, id := range ids {
		if !held[id] {
			missing = append(missing, id)
			missingGens = append(missingGens, gens[i])
		}
	}
	done, err := JobAckConfirm(ctx, c.pool, missing, missingGens)
	if err != nil {
		return fmt.Errorf("%w: %w", errAckOutcomeUnknown, err)
	}
	for _, id := range done {
		held[id] = true
	}
	if len(done) > 0 {
		c.log.Info("acks whose reply was lost were committed", "jobs", len(done))
	}
	return nil
}

// acked records an ack's result (err: the statement failed; !held: the
// lease was lost before the ack) and finishes the job.
func (c *Client) acked(r *ackRequest, err error, held bool) {
	c.ackResult(r, err, held, c.clock())
	c.finishJob(r.q, r.id, r.slot, r.cancel)
}

// finishAcked finishes the jobs of an ack batch whose results are recorded,
// as finishJob does for each, but taking the client's and each queue's lock
// once per batch rather than once per job.
func (c *Client) finishAcked(batch []ackRequest) {
	for i := range batch {
		batch[i].cancel(nil)
	}
	c.mu.Lock()
	for i := range batch {
		c.running.remove(batch[i].slot, batch[i].id)
	}
	c.mu.Unlock()
	for i := 0; i < len(batch); {
		q, n := batch[i].q, 0
		for ; i < len(batch) && batch[i].q == q; i++ {
			n++
		}
		q.outcomesWritten(n)
	}
	c.jobsWG.Add(-len(batch))
}

// ackResult logs and counts an ack's result as of now (Client.clock). Every
// attempt whose handler returned is counted once in queues_jobs_finished_total.
// A handler that succeeded but whose ack was not written (it failed, timed
// out, or was refused because the lease was lost meanwhile) is counted as
// ack_failed: the job ran, and may run again.
func (c *Client) ackResult(r *ackRequest, err error, held bool, now time.Duration) {
	q := r.q
	log := jobLog{log: c.log, job: r.job}
	switch {
	case errors.Is(err, errAckOutcomeUnknown):
		c.errs.note("ack", err)
		c.metrics.finished.WithLabelValues(q.name, "ack_failed").Inc()
		log.Error("ack outcome unknown: the reply was lost and the check failed; the job is done if the ack committed, otherwise it runs again after its lease expires", "err", err)
	case err != nil:
		c.errs.note("ack", err)
		c.metrics.finished.WithLabelValues(q.name, "ack_failed").Inc()
		log.Error("ack failed; the job will run again after its lease expires", "err", err)
	case !held:
		c.metrics.staleAcks.WithLabelValues(q.name).Inc()
		c.metrics.finished.WithLabelValues(q.name, "ack_failed").Inc()
		log.Warn("stale ack refused: the handler succeeded but its lease was lost before the ack; the job may run (or have run) again elsewhere")
	default:
		q.m.ackSeconds.Observe((now - r.start).Seconds())
		q.m.done.Inc()
	}
}
