package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgconsole/console/queues"
)

// insertBatch is how many jobs the continuous inserter COPYs at a time.
const insertBatch = 1000

// maxSamples bounds the latency samples one phase keeps.
const maxSamples = 1 << 21

// stampPayload is a job payload holding the enqueue time in Unix
// nanoseconds: a bare JSON number, so the handler reads it without a JSON
// decoder.
func stampPayload(t time.Time) []byte { return strconv.AppendInt(nil, t.UnixNano(), 10) }

func stampOf(j *queues.Job) (time.Time, bool) {
	n, err := strconv.ParseInt(string(j.Payload), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, n), true
}

// loadResult is one continuous phase.
type loadResult struct {
	window           time.Duration
	worked, inserted int64
	p50, p99         time.Duration // enqueue to handler start, jobs enqueued in the window
}

func (l loadResult) perSecond() float64 { return float64(l.worked) / l.window.Seconds() }

// runLoad inserts and works together on queue for d: an inserter COPYs
// batches of stamped jobs whenever fewer than backlog are waiting (as River's
// bench tops its queue up), a Client works them. It counts the jobs whose
// handler started inside the window. A non-nil series also gets every job
// whose handler started inside the window, by minute.
//
// With rate > 0 jobs arrive at rate per second from the window's start
// instead (arrivals), with no prefill and no backlog cap: each batch is
// stamped with the time its first job was due, so a late insert counts
// against enqueue to start.
func runLoad(ctx context.Context, cfg Config, queue string, d time.Duration, backlog int, series *loadSeries, rate int) (loadResult, error) {
	var res loadResult
	inserted := atomic.Int64{}
	if rate <= 0 {
		if _, err := fill(ctx, cfg, queue, backlog, stampPayload(time.Now())); err != nil {
			return res, fmt.Errorf("prefill: %w", err)
		}
		inserted.Store(int64(backlog))
	}
	var handled, nsamples atomic.Int64
	samples := make([]time.Duration, maxSamples)
	var windowStart atomic.Int64

	c, err := newClient(cfg, queue, nil)
	if err != nil {
		return res, err
	}
	c.Handle("noop", func(_ context.Context, j *queues.Job) error {
		now := time.Now()
		handled.Add(1)
		t, ok := stampOf(j)
		inWindow := ok && t.UnixNano() >= windowStart.Load()
		if inWindow {
			if i := nsamples.Add(1) - 1; i < maxSamples {
				samples[i] = now.Sub(t)
			}
		}
		if series != nil {
			series.job(now, t, inWindow)
		}
		return nil
	})
	start := time.Now()
	windowStart.Store(start.UnixNano())
	if series != nil {
		series.begin(start)
	}
	end := start.Add(d)
	if err := c.Start(ctx); err != nil {
		return res, err
	}
	defer stopClient(c)

	insCtx, stopInserter := context.WithDeadline(ctx, end)
	defer stopInserter()
	var insErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for rate > 0 && insCtx.Err() == nil {
			n := min(arrivalsDue(start, time.Now(), rate)-inserted.Load(), insertBatch)
			if n <= 0 {
				select {
				case <-insCtx.Done():
				case <-time.After(arrivalTick):
				}
				continue
			}
			due := arrivalTime(start, inserted.Load(), rate)
			ps := slices.Repeat([]queues.EnqueueParams{{Queue: queue, Kind: "noop", Payload: stampPayload(due)}}, int(n))
			got, err := queues.EnqueueCopy(insCtx, cfg.Pool, ps)
			inserted.Add(got)
			if err != nil && insCtx.Err() == nil {
				insErr = err
				return
			}
		}
		for rate <= 0 && insCtx.Err() == nil {
			if inserted.Load()-handled.Load() >= int64(backlog) {
				select {
				case <-insCtx.Done():
				case <-time.After(2 * time.Millisecond):
				}
				continue
			}
			ps := slices.Repeat([]queues.EnqueueParams{{Queue: queue, Kind: "noop", Payload: stampPayload(time.Now())}}, insertBatch)
			n, err := queues.EnqueueCopy(insCtx, cfg.Pool, ps)
			inserted.Add(n)
			if err != nil && insCtx.Err() == nil {
				insErr = err
				return
			}
		}
	})
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(end)):
	}
	res.worked = handled.Load()
	res.window = time.Since(start)
	stopInserter()
	wg.Wait()
	stopClient(c)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if insErr != nil {
		return res, fmt.Errorf("insert: %w", insErr)
	}
	res.inserted = inserted.Load()
	k := min(nsamples.Load(), maxSamples)
	lat := samples[:k]
	slices.Sort(lat)
	res.p50, res.p99 = percentile(lat, 0.5), percentile(lat, 0.99)
	return res, nil
}

// arrivalTick is how often a fixed-rate inserter inserts the jobs due.
const arrivalTick = 5 * time.Millisecond

// arrivalsDue is how many jobs have arrived by now at rate per second from
// start.
func arrivalsDue(start, now time.Time, rate int) int64 {
	return int64(now.Sub(start).Seconds() * float64(rate))
}

// arrivalTime is when job i (from 0) arrives at rate per second from start.
func arrivalTime(start time.Time, i int64, rate int) time.Time {
	return start.Add(time.Duration(float64(i) / float64(rate) * float64(time.Second)))
}

// idleLatency enqueues single jobs one at a time on an idle queue (every
// worker free) and measures enqueue-to-handler-start: from just before the
// INSERT's round trip (its commit wakes the fetcher) to the handler call.
func idleLatency(ctx context.Context, cfg Config, queue string, n int) (p50, p99 time.Duration, err error) {
	c, err := newClient(cfg, queue, nil)
	if err != nil {
		return 0, 0, err
	}
	started := make(chan time.Duration, 1)
	c.Handle("noop", func(_ context.Context, j *queues.Job) error {
		if t, ok := stampOf(j); ok {
			select {
			case started <- time.Since(t):
			default:
			}
		}
		return nil
	})
	if err := c.Start(ctx); err != nil {
		return 0, 0, err
	}
	defer stopClient(c)
	// Let the fetcher reach its idle wait (and LISTEN) first.
	select {
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-time.After(300 * time.Millisecond):
	}
	lat := make([]time.Duration, 0, n)
	for range n {
		if _, err := queues.EnqueueTx(ctx, cfg.Pool, queues.EnqueueParams{Queue: queue, Kind: "noop", Payload: stampPayload(time.Now())}); err != nil {
			return 0, 0, err
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case d := <-started:
			lat = append(lat, d)
		case <-time.After(5 * time.Second):
			return 0, 0, fmt.Errorf("a job enqueued on an idle queue did not start within 5s")
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	slices.Sort(lat)
	return percentile(lat, 0.5), percentile(lat, 0.99), nil
}

// idleJobs is how many single jobs the idle-latency phase times.
const idleJobs = 100

// continuousBacklog is how many jobs the inserter keeps waiting: enough
// that workers never run dry between top-ups.
func continuousBacklog(cfg Config) int { return max(2000, 10*cfg.Workers) }

// Continuous inserts and works together for cfg.Duration (jobs/s, and
// enqueue-to-start under that load), then measures enqueue-to-start of
// single jobs on an idle queue.
func Continuous(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	queue := queueName("cont")
	defer deleteQueue(cfg, queue)
	backlog := continuousBacklog(cfg)
	cfg.logf("continuous: %s of insert+work, backlog %d, %d workers", cfg.Duration, backlog, cfg.Workers)
	load, err := runLoad(ctx, cfg, queue, cfg.Duration, backlog, nil, 0)
	if err != nil {
		return r, err
	}
	idleQueue := queueName("idle")
	defer deleteQueue(cfg, idleQueue)
	cfg.logf("continuous: enqueue-to-start of %d single jobs on an idle queue", idleJobs)
	p50, p99, err := idleLatency(ctx, cfg, idleQueue, idleJobs)
	if err != nil {
		return r, err
	}
	r.Add("seconds", "window", load.window.Seconds(), "s")
	r.Add("jobs", "jobs worked in the window", load.worked, "")
	r.Add("jobs_inserted", "jobs inserted", load.inserted, "")
	r.Add("backlog", "backlog kept by the inserter", backlog, "jobs")
	r.Add("workers", "workers (jobs in flight)", cfg.Workers, "")
	r.Add("jobs_per_second", "throughput", load.perSecond(), "jobs/s")
	r.Add("load_p50_ms", "enqueue-to-start p50 under load", ms(load.p50), "ms")
	r.Add("load_p99_ms", "enqueue-to-start p99 under load", ms(load.p99), "ms")
	r.Add("idle_p50_ms", "enqueue-to-start p50, idle workers", ms(p50), "ms")
	r.Add("idle_p99_ms", "enqueue-to-start p99, idle workers", ms(p99), "ms")
	return r, nil
}

// Bloat runs the continuous load twice for cfg.Duration: as is, then with
// another session holding a REPEATABLE READ snapshot (so the xmin horizon
// stays put and no dead tuple of the run can be removed); the ratio is the
// second throughput over the first.
func Bloat(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	var r Report
	backlog := continuousBacklog(cfg)
	phase := func(name string, hold bool) (loadResult, int64, error) {
		queue := queueName(name)
		defer deleteQueue(cfg, queue)
		if err := vacuumJobs(ctx, cfg); err != nil {
			return loadResult{}, 0, err
		}
		if hold {
			release, _, err := holdXmin(ctx, cfg, false)
			if err != nil {
				return loadResult{}, 0, err
			}
			defer release()
		}
		cfg.logf("bloat: %s, %s of insert+work", name, cfg.Duration)
		load, err := runLoad(ctx, cfg, queue, cfg.Duration, backlog, nil, 0)
		if err != nil {
			return load, 0, err
		}
		dead, err := deadTuples(ctx, cfg)
		return load, dead, err
	}
	free, freeDead, err := phase("free", false)
	if err != nil {
		return r, err
	}
	held, heldDead, err := phase("held", true)
	if err != nil {
		return r, err
	}
	r.Add("seconds", "window of each phase", cfg.Duration.Seconds(), "s")
	r.Add("workers", "workers (jobs in flight)", cfg.Workers, "")
	r.Add("jobs_per_second", "throughput, horizon free", free.perSecond(), "jobs/s")
	r.Add("held_jobs_per_second", "throughput, horizon held", held.perSecond(), "jobs/s")
	r.Add("ratio", "held / free", ratio(held.perSecond(), free.perSecond()), "")
	r.Add("dead_tuples_free", "jobs dead tuples after the free phase", freeDead, "")
	r.Add("dead_tuples_held", "jobs dead tuples after the held phase", heldDead, "")
	r.Add("p99_free_ms", "enqueue-to-start p99 under load, free", ms(free.p99), "ms")
	r.Add("p99_held_ms", "enqueue-to-start p99 under load, held", ms(held.p99), "ms")
	r.Add("jobs", "jobs worked (both phases)", free.worked+held.worked, "")
	return r, nil
}

// holdXmin opens a session outside the pool that pins the xmin horizon and
// checks the server sees it do so; release rolls it back and closes the
// session. Without write it is a REPEATABLE READ transaction that has taken
// its snapshot (its backend_xmin holds the horizon); with write it is a
// transaction that wrote a row (holder_write), so its xid holds the horizon
// as a long writing transaction of an application does, between statements
// too. Either way no dead tuple younger than it can be removed.
// pid is the holder's backend.
func holdXmin(ctx context.Context, cfg Config, write bool) (release func(), pid uint32, err error) {
	conn, err := pgx.Connect(ctx, cfg.URL)
	if err != nil {
		return nil, 0, fmt.Errorf("connect the xmin holder: %w", err)
	}
	release = func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.Exec(cctx, "ROLLBACK")
		conn.Close(cctx)
	}
	begin, check := "BEGIN ISOLATION LEVEL REPEATABLE READ", "holder_has_xmin"
	if write {
		begin, check = "BEGIN", "holder_has_xid"
	}
	// The holder idles in its transaction on purpose: a server default
	// must not end it.
	if _, err := conn.Exec(ctx, "SET idle_in_transaction_session_timeout = 0"); err != nil {
		release()
		return nil, 0, fmt.Errorf("xmin holder: %w", err)
	}
	if _, err := conn.Exec(ctx, begin); err != nil {
		release()
		return nil, 0, fmt.Errorf("xmin holder: %w", err)
	}
	if write {
		if _, err := conn.Exec(ctx, sqlText("holder_write")); err != nil {
			release()
			return nil, 0, fmt.Errorf("xmin holder's write: %w", err)
		}
	}
	var holds bool
	if err := conn.QueryRow(ctx, sqlText(check)).Scan(&holds); err != nil {
		release()
		return nil, 0, fmt.Errorf("xmin holder: %w", err)
	}
	if !holds {
		release()
		return nil, 0, fmt.Errorf("the xmin holder's transaction holds no horizon (%s is false)", check)
	}
	return release, conn.PgConn().PID(), nil
}

// deadTuples is the jobs table's n_dead_tup as the statistics report it
// (they lag by up to a second).
func deadTuples(ctx context.Context, cfg Config) (int64, error) {
	var n int64
	err := cfg.Pool.QueryRow(ctx, sqlText("dead_tuples")).Scan(&n)
	return n, err
}
