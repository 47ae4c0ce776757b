package queues

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// refreshSettings re-reads queue_settings for the client's queues and the
// number of live processes serving each, and applies them to the fetchers:
// paused stops claims, max_workers switches claims to the locked (exact)
// path, rate_per_second is shared equally among the live processes, and
// tenant limits switch the queue to fair, locked claims.
func (c *Client) refreshSettings(ctx context.Context) error {
	ls, err := queueSettingsList(ctx, c.pool, c.names, c.liveness)
	if err != nil {
		return err
	}
	for _, s := range ls {
		q := c.queues[s.Queue]
		if q == nil {
			continue
		}
		q.mu.Lock()
		wake := (q.paused && !s.Paused)
		q.paused = s.Paused
		q.throttled = s.MaxWorkers != nil
		if s.TenantLimited != q.tenantLimited {
			wake = true
			q.tenantLimited = s.TenantLimited
		}
		rate := 0.0
		if s.RatePerSecond != nil {
			rate = *s.RatePerSecond / float64(max(s.LiveWorkers, 1))
			if !(rate > 0) || math.IsInf(rate, 0) {
				// Out of the bounds the table's CHECK keeps (older
				// schemas): the smallest rate, never a spin.
				rate = 0.001
			}
		}
		if rate != q.rate {
			wake = true
			q.rate = rate
			q.tokens = min(q.tokens, max(1, rate))
		}
		q.mu.Unlock()
		if wake {
			q.signal()
		}
	}
	return nil
}

// heartbeatWorker writes this process's in-flight counts to its workers
// row; stopped marks the row stopped. refused reports a live heartbeat the
// row did not take: another process found this one dead (see
// sessionRefused).
func (c *Client) heartbeatWorker(ctx context.Context, stopped bool) (refused bool, err error) {
	byQueue := make(map[string]int, len(c.queues))
	total, limit := 0, 0
	for name, q := range c.queues {
		n, l, _ := q.snapshot()
		byQueue[name] = n
		total += n
		limit += l
	}
	tag, err := c.pool.Exec(ctx, sqlText("worker_heartbeat"), c.cfg.ID, total, byQueue, stopped, limit, c.errs.snapshot())
	return err == nil && !stopped && tag.RowsAffected() == 0, err
}

// relistenEvery spaces the new sessions sessionRefused asks for.
const relistenEvery = 10 * time.Second

// sessionRefused handles a heartbeat the workers row refused. Either the
// row is stopped and the session it recorded is gone, so another process
// took this live one for dead (its heartbeat went stale while the server
// dropped its session: a network cut the server noticed first) and
// reclaimed its jobs, fenced; or the row is gone (deleted by hand), and it
// is put back as Start wrote it. The listener may still be waiting on a
// connection the server has closed; it is made to open a new session,
// which records itself, and the next heartbeat brings the row back to
// life. Called by the maintenance loop only.
func (c *Client) sessionRefused(ctx context.Context) {
	if time.Since(c.relistenAt) < relistenEvery {
		return
	}
	c.relistenAt = time.Now()
	tag, err := c.pool.Exec(ctx, sqlText("worker_restore"), c.registration()...)
	switch {
	case err != nil:
		c.errs.note("heartbeat", err)
		c.log.Warn("this worker's heartbeat was refused, and putting back its workers row failed", "err", err)
	case tag.RowsAffected() == 1:
		c.log.Warn("this worker's workers row was gone (deleted while the worker ran): put back")
	default:
		c.log.Warn("this worker's heartbeat was refused: its workers row is stopped (another process found it dead and reclaimed its jobs); a new session will prove it is alive")
	}
	if !c.listens() {
		return
	}
	select {
	case c.relisten <- struct{}{}:
	default:
	}
}

// maintenanceLoop runs once per poll interval: settings and the workers
// row; and the reaper (bounded batches) once per reapInterval. Errors are
// logged and retried next tick.
func (c *Client) maintenanceLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.PollInterval)
	defer t.Stop()
	var reaped time.Time
	var reapTook time.Duration // how long the last reaper tick took
	var rs reapState
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tctx, cancel := context.WithTimeout(ctx, max(c.cfg.PollInterval, 5*time.Second))
		if err := c.refreshSettings(tctx); err != nil {
			c.errs.note("settings", err)
			c.log.Warn("refresh queue settings", "err", err)
		}
		if refused, err := c.heartbeatWorker(tctx, false); err != nil {
			c.errs.note("heartbeat", err)
			c.log.Warn("heartbeat worker row", "err", err)
		} else if refused {
			c.sessionRefused(tctx)
		}
		c.reclaimDead(tctx)
		if time.Now().UnixNano() < c.reconcileUntil.Load() {
			c.releaseOrphans(tctx)
		}
		if time.Since(reaped) >= c.reapWait(reapTook) {
			reapTook = c.reapTick(tctx, &rs, time.Now())
			reaped = time.Now()
		}
		cancel()
	}
}

// reapInterval is how often the reaper looks for expired leases: a tenth of
// the lease, between one poll interval and 5 seconds. A lease expires long
// after its job's worker stopped renewing it, so looking more often than
// that only adds index scans (which, while a snapshot holds the xmin
// horizon, step over every job finished since).
func (c *Client) reapInterval() time.Duration {
	return max(c.cfg.PollInterval, min(c.cfg.LeaseDuration/10, 5*time.Second))
}

// reapSpacing is how many times the last reaper tick's duration the next
// one waits, at least.
const reapSpacing = 20

// reapWait is how long after the last reaper tick, which took took, the
// next one runs: reapInterval, or reapSpacing times took when that is
// longer. While a snapshot holds the xmin horizon, jobs_running_lease_idx
// keeps an entry for every lease taken or renewed since, and the reaper's
// scan of the expired range visits all of those whose time has passed:
// growing by a second every few minutes of a busy queue, it came to run
// back to back, one of the pool's connections and a core busy for nothing.
// Spaced by its cost it stays a twentieth of one connection; an expired
// lease waits that much longer, and a dead worker's jobs are taken back
// sooner anyway (reclaimDead).
func (c *Client) reapWait(took time.Duration) time.Duration {
	return max(c.reapInterval(), reapSpacing*took)
}

// reapTick runs one reaper tick at now (this process's clock): a scan of
// the expired leases from the floor, or from the start when one is due.
// It returns how long the scan took.
func (c *Client) reapTick(ctx context.Context, rs *reapState, now time.Time) time.Duration {
	from := rs.from(now, c.reapInterval())
	start := time.Now()
	covered := c.reap(ctx, from)
	took := time.Since(start)
	rs.done(now, took, from.IsZero(), covered, c.cfg.LeaseDuration)
	return took
}

// reapState is where the reaper's scans of jobs_running_lease_idx start.
// While a snapshot holds the xmin horizon that index keeps an entry for
// every lease taken or renewed since, and a scan from its start visits
// every one whose time has passed: in bench pressure it grew past the
// tick's 5 s timeout within seven minutes, so the reaper stopped reaping
// at all. So a scan that covered its whole range (its last batch came back
// short) moves the floor to its start less a LeaseDuration (the margin
// for a claim or renewal that committed late), and the next scans start
// there. That start is read from the database's clock, the one lease_until
// is written with: taken from this process's clock, running more than a
// lease ahead of the database's, the floor would stand above leases that
// had just expired, and they would wait for the next scan from the start.
// A scan from the start still runs every reapFullEvery ticks, spaced by
// its cost like the ticks, for what a bounded scan cannot see: a lease
// that expired below the floor while a statement that rolled back held
// its row. Its schedule is kept on this process's clock: only intervals
// are read from it.
type reapState struct {
	floor    time.Time     // leases that ended before it were scanned (zero: none yet; the database's clock)
	fullAt   time.Time     // when the last scan from the start began (this process's clock)
	fullTook time.Duration // and how long it took
}

// reapFullEvery is how many reaper intervals apart the scans from the
// start run, at least.
const reapFullEvery = 10

// from is where the tick at now starts its scan: the floor, or the zero
// time for a scan from the start.
func (r *reapState) from(now time.Time, interval time.Duration) time.Time {
	if r.floor.IsZero() || now.Sub(r.fullAt) >= max(reapFullEvery*interval, reapSpacing*r.fullTook) {
		return time.Time{}
	}
	return r.floor
}

// done records a tick that began at start (this process's clock) and
// took took: full says it scanned from the start; covered, when the scan
// covered its whole range, is when its first statement began on the
// database's clock (zero when it did not).
func (r *reapState) done(start time.Time, took time.Duration, full bool, covered time.Time, lease time.Duration) {
	if full {
		r.fullAt, r.fullTook = start, took
	}
	if floor := covered.Add(-lease); !covered.IsZero() && floor.After(r.floor) {
		r.floor = floor
	}
}

// reap returns expired leases that ended at from or later (zero: all) in
// at most 10 batches per tick. When its last batch came back short, so
// that every expired lease in the range it could lock was reaped, covered
// is when its first batch began on the database's clock (ReapResult.At);
// zero otherwise.
func (c *Client) reap(ctx context.Context, from time.Time) (covered time.Time) {
	var began time.Time
	for i := range 10 {
		res, err := JobReapFrom(ctx, c.pool, c.cfg.ReapBatch, c.cfg.MaxErrors, from)
		if err != nil {
			c.errs.note("reap", err)
			c.log.Warn("reap expired leases", "err", err)
			return time.Time{}
		}
		if i == 0 {
			began = res.At
		}
		for q, n := range res.ByQueue {
			c.log.Info("reaped expired leases", "queue", q, "count", n)
		}
		if res.Requeued+res.Dead > 0 {
			c.countReaped(ctx, res)
		}
		if res.Requeued+res.Dead < c.cfg.ReapBatch {
			return began
		}
	}
	return time.Time{}
}

// deadAfter is the shortest heartbeat silence after which a worker whose
// session is gone counts as dead, whatever its own heartbeat interval.
const deadAfter = 2 * time.Second

// reclaimDead takes back at once the running jobs of workers that are dead:
// heartbeat stale and session gone, on two looks (WorkerDeadFind, then
// WorkerDeadMark; JobReclaimDead). A slow or stopped process keeps its
// session and its leases.
func (c *Client) reclaimDead(ctx context.Context) {
	res, err := JobReclaimDead(ctx, c.pool, deadAfter, c.cfg.MaxErrors)
	if err != nil {
		c.errs.note("reap", err)
		c.log.Warn("reclaim the jobs of dead workers", "err", err)
		return
	}
	for _, w := range res.Workers {
		c.log.Warn("worker found dead (heartbeat stale, session gone); its jobs were reclaimed", "dead_worker", w)
	}
	for q, n := range res.ByQueue {
		c.log.Info("reclaimed the jobs of dead workers", "queue", q, "count", n)
	}
	if res.Requeued+res.Dead > 0 {
		c.countReaped(ctx, res.ReapResult)
	}
}

func (c *Client) countReaped(_ context.Context, res ReapResult) {
	for q, n := range res.ByQueue {
		dead := res.DeadByQueue[q]
		c.metrics.expired.WithLabelValues(q, StatusReady).Add(float64(n - dead))
		c.metrics.expired.WithLabelValues(q, StatusDead).Add(float64(dead))
	}
}

// renewLoop is the lease heartbeat: every third of the lease it renews every
// job this process runs in one statement, moves the local lease deadline of
// the jobs it still holds (leaseWatch enforces it), and cancels (cause
// ErrLeaseLost) the handlers of jobs it no longer holds. It runs until the
// drain ends.
func (c *Client) renewLoop(ctx context.Context) {
	t := time.NewTicker(c.cfg.LeaseDuration / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		ids := make([]int64, 0, c.running.len())
		gens := make([]int64, 0, c.running.len())
		jcs := make([]*jobContext, 0, c.running.len())
		c.running.each(func(r runningJob) {
			ids = append(ids, r.id)
			gens = append(gens, r.generation)
			jcs = append(jcs, r.jc)
		})
		c.mu.Unlock()
		if len(ids) == 0 {
			continue
		}
		sent := c.clock()
		rctx, cancel := context.WithTimeout(ctx, c.cfg.LeaseDuration/3)
		held, err := JobRenewMany(rctx, c.pool, c.cfg.ID, ids, gens, c.cfg.LeaseDuration)
		cancel()
		if err != nil {
			c.errs.note("renew", err)
			c.log.Warn("renew leases", "err", err, "jobs", len(ids))
			continue
		}
		// One loop sends every renewal, so deadlines only move later.
		deadline := int64(leaseDeadline(sent, c.cfg.LeaseDuration))
		if len(held) == len(ids) {
			for _, jc := range jcs {
				if jc != nil {
					jc.deadline.Store(deadline)
				}
			}
			continue // every lease renewed
		}
		kept := make(map[int64]bool, len(held))
		for _, id := range held {
			kept[id] = true
		}
		lost := map[int64]int64{} // id: the generation whose lease was lost
		for i, id := range ids {
			switch {
			case !kept[id]:
				lost[id] = gens[i]
			case jcs[i] != nil:
				jcs[i].deadline.Store(deadline)
			}
		}
		// Only the attempt whose renewal failed is cancelled: a job that
		// ended meanwhile is gone, and one claimed again since has a
		// newer generation.
		c.mu.Lock()
		c.running.each(func(r runningJob) {
			// A job completed in its handler's transaction is done, not
			// lost: its handler may still be reading its COMMIT's reply.
			if g, ok := lost[r.id]; ok && r.generation == g && (r.jc == nil || !r.jc.completed.Load()) {
				r.cancel(ErrLeaseLost)
			}
		})
		c.mu.Unlock()
	}
}

// Waits between LISTEN sessions: doubled after each session that ends
// early, back to the shortest after one that stayed up for listenStableAfter.
const (
	listenRetryMin    = 100 * time.Millisecond
	listenRetryMax    = 5 * time.Second
	listenStableAfter = 10 * time.Second
)

// nextListenRetry returns the wait before the next LISTEN session, given
// prev, the wait before the session that just ended (zero for the first),
// whether that session got established and how long it then stayed up:
// an outage backs off to listenRetryMax, but a session that stayed up for
// stable ended the outage, so the wait starts again from listenRetryMin.
func nextListenRetry(prev time.Duration, established bool, up, stable time.Duration) time.Duration {
	if established && up >= stable {
		return listenRetryMin
	}
	return min(max(2*prev, listenRetryMin), listenRetryMax)
}

// errRelisten ends a LISTEN session that sessionRefused asked to replace.
var errRelisten = errors.New("a new session was asked for")

// listenLoop holds a dedicated connection (outside the pool) LISTENing on
// NotifyChannel and wakes the named queue's fetcher. After a reconnect it
// wakes every fetcher, since notifications sent meanwhile were lost.
func (c *Client) listenLoop(ctx context.Context) {
	var delay time.Duration
	for ctx.Err() == nil {
		var since time.Time
		err := c.listen(ctx, &since)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errRelisten) {
			c.log.Info("listener reconnecting to record a new session")
			delay = 0
			continue
		}
		delay = nextListenRetry(delay, !since.IsZero(), time.Since(since), c.listenStable)
		c.errs.note("listen", err)
		c.startReconcile()
		c.log.Warn("listener lost; polling continues", "err", err, "retry_in", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listen runs one LISTEN session until it fails; it sets *since when the
// session is established (listening, its backend recorded).
func (c *Client) listen(ctx context.Context, since *time.Time) error {
	cfg := sessionConfig(c.pool, c.cfg.SessionConnConfig)
	cfg.RuntimeParams["application_name"] = ApplicationName
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(closeCtx)
		cancel()
	}()
	if _, err := conn.Exec(ctx, sqlText("job_listen")); err != nil {
		return err
	}
	// This session is the new one a refused heartbeat asked for, if any.
	select {
	case <-c.relisten:
	default:
	}
	// This session is the worker's proof of life: while it exists, other
	// processes leave the worker's leases to expire on their own.
	if _, err := conn.Exec(ctx, sqlText("worker_session_record"), c.cfg.ID); err != nil {
		return err
	}
	*since = time.Now()
	for _, q := range c.queues {
		q.signal()
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.relisten:
			cancel()
		case <-sctx.Done():
		}
	}()
	for {
		n, err := conn.WaitForNotification(sctx)
		if err != nil {
			if sctx.Err() != nil && ctx.Err() == nil {
				return errRelisten
			}
			return err
		}
		if q := c.queues[n.Payload]; q != nil {
			q.signal()
		}
	}
}
