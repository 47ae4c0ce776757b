package queues

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// queueRunner is one queue's fetcher state: a resizable concurrency gate
// (limit, inFlight), the queue's live settings and its rate bucket. Its
// fetcher is the only goroutine that reserves slots; job goroutines free
// them.
type queueRunner struct {
	name string
	cfg  QueueConfig
	wake chan struct{} // capacity 1: a pending wake-up is never lost or doubled
	m    queueMetrics

	mu        sync.Mutex
	limit     int
	inFlight  int  // handlers running
	writing   int  // attempts whose handler returned, outcome not yet written
	claimSize int  // adaptive: grows on fast full claims, halves on slow or failed ones
	maxClaim  int  // upper bound of claimSize
	backlog   bool // the last claim was full: wake on a freed slot
	paused    bool
	throttled bool    // max_workers set: claims take the queue's claim lock
	rate      float64 // this process's share of rate_per_second; 0 = unlimited
	tokens    float64
	lastFill  time.Time
	// cursor is the claim key the next claim resumes after (nil: the
	// head); cursorSince is when the claims stopped starting from the head.
	cursor      *ClaimKey
	cursorSince time.Time
	// rescanning: a claim from the head that a rescan started is in
	// flight, and the claims beside it keep resuming after the cursor.
	// headTook and cursorTook are how long the last claims from the head
	// and after the cursor took: the next rescan waits at least
	// rescanSpacing times the cheapest from the head (see claimFrom), and
	// a short claim keeps the cursor while the head costs much more than
	// the cursor (see advance).
	rescanning bool
	headTook   claimCosts
	cursorTook claimCosts
	// fair: claims share the queue between its tenants (JobClaimFair),
	// switched on when a claim takes a job with a tenant or the queue has
	// tenant limits, and off when a fair claim takes none and there are no
	// limits, so a queue without tenants runs the plain claim.
	// tenantCursor is the tenant the next fair claim starts after.
	fair          bool
	tenantLimited bool // tenant_limits has rows for the queue
	tenantCursor  string

	// spreadUntil (Unix nanoseconds): until then each claimed job runs on
	// a goroutine of its own (startJobs).
	spreadUntil atomic.Int64
}

func newQueueRunner(name string, cfg QueueConfig, maxClaim int) *queueRunner {
	return &queueRunner{
		name: name, cfg: cfg, wake: make(chan struct{}, 1),
		limit: cfg.Concurrency, claimSize: min(cfg.Concurrency, maxClaim, 10), maxClaim: maxClaim,
	}
}

func (q *queueRunner) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// SetConcurrency resizes queue's local concurrency gate without a restart:
// lowering it lets running jobs finish and claims nothing until in-flight
// drops below the new limit; raising it claims more at the next wake-up.
func (c *Client) SetConcurrency(queue string, n int) error {
	q, ok := c.queues[queue]
	if !ok {
		return errors.New("set concurrency: unknown queue " + queue)
	}
	q.mu.Lock()
	q.limit = max(n, 0)
	q.mu.Unlock()
	q.signal()
	return nil
}

// reserve takes up to claimSize free slots (and rate tokens) for a claim.
// With nothing to take it returns how long to wait before trying again (0:
// wait for a wake-up or the poll).
func (q *queueRunner) reserve(now time.Time) (n int, wait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.paused || q.writing >= q.writeBackupLocked() {
		// Outcome writes backing up means the database is slow: claim
		// nothing more until they drain.
		return 0, 0
	}
	n = min(q.limit-q.inFlight, q.claimSize)
	if n <= 0 {
		return 0, 0
	}
	if q.rate > 0 {
		if !q.lastFill.IsZero() {
			q.tokens += now.Sub(q.lastFill).Seconds() * q.rate
		}
		q.lastFill = now
		// The bucket holds at most one claim's worth (and at least one
		// token): a rate like 1e19 then cannot overflow the conversion to
		// int below into a negative count.
		q.tokens = min(q.tokens, math.Max(1, math.Min(q.rate, float64(q.maxClaim))))
		if !(q.tokens >= 1) { // also NaN
			return 0, tokenWait(1-q.tokens, q.rate)
		}
		n = min(n, int(q.tokens))
		q.tokens -= float64(n)
	}
	q.inFlight += n
	return n, 0
}

// maxTokenWait bounds the wait for a rate token: a tiny rate (5e-324 per
// second) would otherwise overflow the duration; settings are re-read every
// poll anyway.
const maxTokenWait = time.Minute

// tokenWait is how long missing tokens take to accrue at rate per second,
// between a millisecond and maxTokenWait (NaN and infinities included).
func tokenWait(missing, rate float64) time.Duration {
	secs := missing / rate
	if !(secs < maxTokenWait.Seconds()) {
		return maxTokenWait
	}
	return max(time.Duration(secs*float64(time.Second)), time.Millisecond)
}

// settle gives back the slots and tokens a claim reserved but did not fill,
// and adapts the claim size.
func (q *queueRunner) settle(reserved, got int, slow, failed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inFlight -= reserved - got
	if q.rate > 0 {
		q.tokens += float64(reserved - got)
	}
	switch {
	case failed || slow:
		q.claimSize = max(1, q.claimSize/2)
	case got == reserved && reserved == q.claimSize:
		q.claimSize = min(q.claimSize*2, q.maxClaim)
	}
	q.backlog = got == reserved && !failed
}

// rescanSpacing is how many times a rescan's cost the claims resume after
// the cursor before the next rescan.
const rescanSpacing = 20

// claimCosts holds how long the last few claims of one kind took, a ring
// whose cheapest is what the claims cost: one claim slowed by the process
// (a stall, a busy core, a wait for a connection) does not count, while a
// head that is slow to walk, slow every time, does. The process's first
// claims count as free.
type claimCosts struct {
	took [3]time.Duration
	n    int
}

func (c *claimCosts) add(took time.Duration) {
	c.took[c.n%len(c.took)] = took
	c.n++
}

// cheapest is the shortest of the last claims, zero until the ring is full:
// the first claims open the pool's connections.
func (c *claimCosts) cheapest() time.Duration { return slices.Min(c.took[:]) }

// headCostFactor is how many times a claim after the cursor a claim from
// the head must cost before a short claim keeps the cursor.
const headCostFactor = 4

// claimFrom is where the next claim starts: after the cursor, or at the
// head (nil) when there is none or the claims have resumed after it for
// rescan already, so that a job that committed behind the cursor waits at
// most about that long. head says the claim is such a rescan; the caller
// reports its end to claimEnded.
//
// While a snapshot holds the xmin horizon, the head of jobs_ready_pick_idx
// keeps an entry for every job claimed since, and a claim from the head
// visits them all: after ten minutes of a busy queue a rescan takes
// seconds. So one rescan runs at a time, the claims beside it resume after
// the cursor (it stays), and the next rescan waits rescanSpacing times as
// long as the recent claims from the head took: walking the head stays a
// small share of the claims' time. Clearing the cursor instead sent every
// claim launched during a slow rescan to the head too, and throughput
// collapsed.
func (q *queueRunner) claimFrom(now time.Time, rescan time.Duration) (from *ClaimKey, head bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.cursor == nil || q.rescanning || now.Sub(q.cursorSince) < max(rescan, rescanSpacing*q.headTook.cheapest()) {
		return q.cursor, false
	}
	q.rescanning = true
	return nil, true
}

// claimEnded records how long a claim took (whether it succeeded or not),
// from the head or after the cursor; a rescan that claimFrom started ends,
// and the claims resume after the cursor from now.
func (q *queueRunner) claimEnded(now time.Time, r claimResult) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.fromHead {
		q.headTook.add(r.took)
	} else {
		q.cursorTook.add(r.took)
	}
	if r.rescan {
		q.rescanning = false
		q.cursorSince = now
	}
}

// advance moves the cursor past the jobs a claim took. A short claim
// means nothing more is ready past the cursor: the next claim starts from
// the head, which finds what committed behind the cursor at once. Unless
// the head costs headCostFactor times a claim after the cursor: behind a
// pinned horizon, with arrivals that keep the queue nearly empty, every
// claim comes back short, and sending each to the head made every claim
// walk the dead entries of all the jobs claimed since the pin. The cursor
// then stays (arrivals sort after it) and the spaced rescans find what
// lands behind it. A claim from the head that came back full found a
// backlog behind the cursor (jobs of a higher priority, or jobs handed
// back): the claims resume after it, not after the old cursor, so that
// backlog is not left to one rescan's batch at a time.
func (q *queueRunner) advance(now time.Time, jobs []Job, short, fromHead bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if (short || len(jobs) == 0) && !q.headCostlyLocked() {
		q.cursor = nil
		return
	}
	if len(jobs) == 0 {
		return
	}
	if q.cursor == nil {
		q.cursorSince = now
	}
	if fromHead && !short {
		q.cursor = NextClaimKey(nil, jobs)
		return
	}
	q.cursor = NextClaimKey(q.cursor, jobs)
}

// headCostlyLocked reports whether claims from the head have cost
// headCostFactor times those after the cursor lately (both known). The
// caller holds q.mu.
func (q *queueRunner) headCostlyLocked() bool {
	after := q.cursorTook.cheapest()
	return after > 0 && q.headTook.cheapest() > headCostFactor*after
}

// claimMode is how the next claim runs: fair or not, where a fair one
// starts, and whether it takes the queue's claim lock (max_workers or
// tenant limits set).
func (q *queueRunner) claimMode() (fair bool, tenantFrom string, locked bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	fair = q.fair || q.tenantLimited
	return fair, q.tenantCursor, q.throttled || (fair && q.tenantLimited)
}

// observeTenants switches fair claims on or off after a claim (fair or not,
// started after tenant cursor from) took jobs, and moves the tenant cursor.
func (q *queueRunner) observeTenants(jobs []Job, fair bool, from string) {
	tenants := slices.ContainsFunc(jobs, func(j Job) bool { return j.TenantID != nil })
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case fair:
		q.fair = tenants || q.tenantLimited
		if q.tenantCursor == from {
			q.tenantCursor = NextTenant(from, jobs)
		}
	case tenants:
		q.fair = true
	}
}

// parallel reports whether a claim may start while another is in flight:
// only when the last claim came back full (a backlog) and enough slots are
// free for a batch.
func (q *queueRunner) parallel() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.backlog && q.limit-q.inFlight >= q.batchLocked()
}

// handlerReturned frees the slot of a job whose handler returned; its
// outcome is being written. It wakes the fetcher when the queue had a
// backlog.
func (q *queueRunner) handlerReturned() {
	q.mu.Lock()
	q.inFlight--
	q.writing++
	wake := q.backlog
	q.mu.Unlock()
	if wake {
		q.signal()
	}
}

// outcomeWritten ends an attempt's outcome write.
func (q *queueRunner) outcomeWritten() { q.outcomesWritten(1) }

// writeBackupLocked is how many outcomes waiting to be written stop the
// claims: twice the queue's limit. One limit's worth is what the handlers
// of one full turn of the queue hand over at once, and the ack statements
// write it while the next turn runs; claims stop only when a second turn
// has piled up behind it. At one limit, a queue of fast jobs stopped
// claiming whenever a turn's acks were being written, and its burn-down
// ran about 7 % slower (docs/benchmarks-log.md, run 11). The caller holds q.mu.
func (q *queueRunner) writeBackupLocked() int {
	return max(2*q.limit, 1)
}

// outcomesWritten ends n attempts' outcome writes. It wakes the fetcher
// when the queue had a backlog and the writes fall below writeBackupLocked
// (reserve claims nothing while they are at it).
func (q *queueRunner) outcomesWritten(n int) {
	q.mu.Lock()
	before := q.writing
	q.writing -= n
	backup := q.writeBackupLocked()
	wake := q.backlog && before >= backup && q.writing < backup
	q.mu.Unlock()
	if wake {
		q.signal()
	}
}

func (q *queueRunner) snapshot() (inFlight, limit int, throttled bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inFlight, q.limit, q.throttled
}

// claimResult is the outcome of one claim statement run by fetchLoop.
type claimResult struct {
	sent       time.Time // when the claim statement was sent
	took       time.Duration
	fromHead   bool // the claim started from the head
	rescan     bool // a claim from the head that claimFrom started as a rescan
	reserved   int
	jobs       []Job
	slow       bool
	err        error
	fair       bool
	tenantFrom string
}

// fetchLoop claims jobs of q whenever it is woken (NOTIFY, a freed slot
// with a backlog, a settings change), a claim comes back full, or the poll
// interval passes, and starts one goroutine per claimed job: never more
// than the free slots. Claims run in goroutines of their own, one at a time
// on an idle queue and up to ClaimConcurrency side by side while there is a
// backlog, so the database always has the next claim in hand while the
// jobs of the last one run. Claim errors back off exponentially up to 10
// poll intervals. When ctx ends, the claims in flight finish and their jobs
// are handed back unstarted.
func (c *Client) fetchLoop(ctx context.Context, q *queueRunner) {
	results := make(chan claimResult, c.cfg.ClaimConcurrency)
	claiming := 0
	defer func() {
		for ; claiming > 0; claiming-- {
			r := <-results
			c.releaseUnstarted(q, r.jobs)
			q.settle(r.reserved, 0, false, false)
		}
	}()
	timer := time.NewTimer(0)
	defer timer.Stop()
	var errDelay time.Duration
	var holdUntil time.Time
	var busyUntil time.Time // claims found jobs lately: poll every BusyRepoll
	// woken is a wake-up that came while a claim was in flight: that claim
	// may have read the queue before what woke us committed, so when it
	// comes back empty-handed the queue is claimed again at once rather
	// than at the next poll.
	woken := false
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-results:
			claiming--
			q.claimEnded(time.Now(), r)
			if r.err != nil {
				c.metrics.claimErrors.WithLabelValues(q.name).Inc()
				c.errs.note("claim", r.err)
				c.startReconcile() // the claim may have committed
				errDelay = min(max(2*errDelay, 50*time.Millisecond), 10*c.cfg.PollInterval)
				holdUntil = time.Now().Add(errDelay)
				c.log.Warn("claim failed; backing off", "queue", q.name, "err", r.err, "retry_in", errDelay)
				break
			}
			errDelay = 0
			if ctx.Err() != nil {
				// Stop began while the claim ran: hand the jobs back unstarted.
				c.releaseUnstarted(q, r.jobs)
				q.settle(r.reserved, 0, false, false)
				return
			}
			q.settle(r.reserved, len(r.jobs), r.slow, false)
			q.advance(time.Now(), r.jobs, len(r.jobs) < r.reserved, r.fromHead)
			q.observeTenants(r.jobs, r.fair, r.tenantFrom)
			c.startJobs(q, r.jobs, r.sent)
			if len(r.jobs) < r.reserved {
				// Drained: wait for a wake-up or the poll; for a
				// NotifyInterval after a claim that found jobs, look
				// again every BusyRepoll for jobs enqueued without a
				// NOTIFY (see NotifyInterval). The window ends with the
				// first claim *sent* after it, not the first that
				// returns after it: a slow claim that read the queue
				// within the window may have missed a job committed
				// just after it read.
				now := time.Now()
				if len(r.jobs) > 0 {
					busyUntil = now.Add(NotifyInterval + BusyRepoll)
				}
				if woken && claiming == 0 {
					woken = false
					break // claim again now
				}
				if r.sent.Before(busyUntil) {
					timer.Reset(min(c.cfg.PollInterval, BusyRepoll))
				} else {
					timer.Reset(c.cfg.PollInterval)
				}
				continue
			}
		case <-q.wake:
			if claiming > 0 {
				woken = true
				if !q.parallel() {
					continue
				}
				// A backlog, and a batch's worth of slots freed while a
				// claim runs: claim beside it now, not when it returns.
			} else {
				woken = false
				if !c.cooldown(ctx, q) {
					return
				}
			}
		case <-timer.C:
		}
		timer.Reset(c.launchClaims(ctx, q, results, &claiming, holdUntil))
	}
}

// launchClaims starts claims while slots are free: one when none is in
// flight, more (up to ClaimConcurrency) while the queue has a backlog. It
// returns how long to wait before polling again.
func (c *Client) launchClaims(ctx context.Context, q *queueRunner, results chan<- claimResult, claiming *int, holdUntil time.Time) time.Duration {
	now := time.Now()
	if now.Before(holdUntil) {
		return holdUntil.Sub(now)
	}
	next := c.cfg.PollInterval
	for *claiming < c.cfg.ClaimConcurrency && ctx.Err() == nil {
		if *claiming > 0 && !q.parallel() {
			break
		}
		n, wait := q.reserve(now)
		if n == 0 {
			if wait > 0 {
				next = min(next, wait)
			}
			break
		}
		from, head := q.claimFrom(now, c.cfg.ClaimRescan)
		*claiming++
		go func() {
			r := c.claim(q, n, from)
			r.fromHead, r.rescan = from == nil, head
			results <- r
		}()
	}
	return next
}

// cooldown delays a claim woken while few slots are free, by at most
// FetchCooldown or until half the slots are free, so that a backlog is
// claimed in batches rather than one job per statement (a claim of one costs
// nearly as much as a claim of ten). It returns false when ctx ends.
func (c *Client) cooldown(ctx context.Context, q *queueRunner) bool {
	if c.cfg.FetchCooldown <= 0 || q.free() >= q.batchThreshold() {
		return true
	}
	t := time.NewTimer(c.cfg.FetchCooldown)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		case <-q.wake:
			if q.free() >= q.batchThreshold() {
				return true
			}
		}
	}
}

func (q *queueRunner) free() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.limit - q.inFlight
}

func (q *queueRunner) batchThreshold() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.batchLocked()
}

// batchLocked is how many free slots make a claim worth its statement:
// half the queue's slots, at most a full claim. The caller holds q.mu.
func (q *queueRunner) batchLocked() int {
	return max(1, min(q.limit/2, q.maxClaim))
}

// claim runs one claim statement for n reserved slots, resuming after
// from, with a context of its own: cancelling a claim mid-flight would
// leave its outcome unknown and the jobs leased until expiry, so Stop lets
// it finish and releases what it got.
func (c *Client) claim(q *queueRunner, n int, from *ClaimKey) claimResult {
	ctx, cancel := context.WithTimeout(context.Background(), c.claimTimeout())
	defer cancel()
	fair, tenantFrom, locked := q.claimMode()
	start := time.Now()
	jobs, err := JobClaim(ctx, c.pool, JobClaimParams{
		Queue: q.name, Limit: n, Owner: c.cfg.ID, Lease: c.cfg.LeaseDuration, Throttled: locked, After: from,
		Fair: fair, TenantAfter: tenantFrom,
	})
	took := time.Since(start)
	if c.afterClaim != nil {
		c.afterClaim(start, len(jobs))
	}
	c.metrics.claimSeconds.WithLabelValues(q.name).Observe(took.Seconds())
	slow := took > max(c.cfg.PollInterval/2, 200*time.Millisecond)
	if err != nil {
		q.settle(n, 0, slow, true)
		return claimResult{sent: start, took: took, err: err}
	}
	if len(jobs) > 0 {
		q.m.claimed.Add(float64(len(jobs)))
		for i := range jobs {
			if jobs[i].StartedAt != nil {
				q.m.queueWait.Observe(max(0, jobs[i].StartedAt.Sub(jobs[i].AvailableAt).Seconds()))
			}
		}
	}
	return claimResult{sent: start, took: took, reserved: n, jobs: jobs, slow: slow, fair: fair, tenantFrom: tenantFrom}
}

// startReconcile makes the maintenance loop look for orphan claims until
// every claim that may have committed unseen is old enough to be told from
// one in flight.
func (c *Client) startReconcile() {
	c.reconcileUntil.Store(time.Now().Add(c.claimTimeout() + 3*time.Second).UnixNano())
}

// claimTimeout bounds one claim statement.
func (c *Client) claimTimeout() time.Duration {
	return max(10*time.Second, c.cfg.LeaseDuration/2)
}

// releaseOrphans releases the jobs the database says this worker holds but
// it is not running: claims whose commit went through while their reply
// was lost (a connection broken by a server restart). Only claims older
// than a claim statement may run are considered, so a claim in flight is
// never taken for an orphan.
func (c *Client) releaseOrphans(ctx context.Context) {
	rows, err := c.pool.Query(ctx, sqlText("job_orphan_list"), c.cfg.ID, (c.claimTimeout() + time.Second).Milliseconds())
	if err != nil {
		c.errs.note("reconcile", err)
		return
	}
	type held struct{ id, generation int64 }
	var orphans []held
	var h held
	_, err = pgx.ForEachRow(rows, []any{&h.id, &h.generation}, func() error {
		orphans = append(orphans, h)
		return nil
	})
	if err != nil {
		c.errs.note("reconcile", err)
		return
	}
	orphan := make(map[int64]bool, len(orphans))
	for _, o := range orphans {
		orphan[o.id] = true
	}
	c.mu.Lock()
	c.running.each(func(r runningJob) { delete(orphan, r.id) })
	c.mu.Unlock()
	orphans = slices.DeleteFunc(orphans, func(o held) bool { return !orphan[o.id] })
	var released []int64
	for _, o := range orphans {
		if err := JobRelease(ctx, c.pool, o.id, c.cfg.ID, o.generation, true); err == nil {
			released = append(released, o.id)
		}
	}
	if len(released) > 0 {
		c.log.Warn("released claims this worker held but was not running (their claim's reply was lost)",
			"released", len(released), "released_ids", released)
	}
}

func (c *Client) releaseUnstarted(q *queueRunner, jobs []Job) {
	for _, j := range jobs {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := JobRelease(ctx, c.pool, j.ID, c.cfg.ID, j.LeaseGeneration, true)
		cancel()
		if err != nil {
			c.log.Warn("release unstarted job", "job", j.ID, "err", err)
			continue
		}
		c.metrics.finished.WithLabelValues(q.name, "released").Inc()
	}
}
