package queues

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/metricsum"
	"github.com/pgconsole/console/internal/testdb"
)

// partitionProxy forwards TCP to PostgreSQL and can be paused: while
// paused it moves no byte in either direction and passes on no close, and
// sends no reset either, so both ends see a silent partition (their writes
// succeed, their reads wait) until it resumes and delivers what it held,
// as TCP retransmission would after a short outage. New connections are
// accepted but wait too.
type partitionProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	conns  []net.Conn
}

func startPartitionProxy(t *testing.T, target string) *partitionProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &partitionProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.serve()
	t.Cleanup(func() {
		p.resume()
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	return p
}

func (p *partitionProxy) pause() {
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
}

func (p *partitionProxy) resume() {
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
	p.cond.Broadcast()
}

// pass waits while the proxy is paused.
func (p *partitionProxy) pass() {
	p.mu.Lock()
	for p.paused {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

func (p *partitionProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			p.pass()
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(s, c)
			go p.pipe(c, s)
		}()
	}
}

// pipe copies from src to dst, holding every chunk (and the close at the
// end) while the proxy is paused.
func (p *partitionProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.pass()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				src.Close()
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
					return
				}
			}
			dst.Close()
			return
		}
	}
}

// throughProxy returns url with its host and port replaced by addr.
func throughProxy(t *testing.T, raw, addr string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	u.Host = addr
	return u.String()
}

// serverAddr is the host:port of a database URL.
func serverAddr(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	require.NoError(t, err)
	require.NotEmpty(t, u.Port(), "the test database URL names no port: %s", raw)
	return u.Host
}

// leaseLog records every lease a job was given (claim or renewal), by
// generation, so a test knows when each lease ended in the database.
const leaseLog = `CREATE TABLE lease_log (job_id bigint, generation bigint, lease_until timestamptz);
	CREATE FUNCTION lease_log() RETURNS trigger LANGUAGE plpgsql AS
		$$BEGIN INSERT INTO lease_log VALUES (NEW.id, NEW.lease_generation, NEW.lease_until); RETURN NULL; END$$;
	CREATE TRIGGER lease_log AFTER UPDATE OF lease_until ON jobs
		FOR EACH ROW WHEN (NEW.lease_until IS NOT NULL) EXECUTE FUNCTION lease_log();`

// attemptRun is one handler run of a job, on the test's clock.
type attemptRun struct {
	worker     string
	generation int64
	start, end time.Time
	cause      error
}

// runLog collects attemptRuns from handlers.
type runLog struct {
	mu   sync.Mutex
	runs map[int64][]attemptRun
}

func (l *runLog) add(id int64, r attemptRun) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[int64][]attemptRun{}
	}
	l.runs[id] = append(l.runs[id], r)
}

func (l *runLog) snapshot() map[int64][]attemptRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64][]attemptRun, len(l.runs))
	for id, rs := range l.runs {
		out[id] = append([]attemptRun(nil), rs...)
	}
	return out
}

// TestPartitionedWorkerStopsAtItsLease: a worker whose packets to
// PostgreSQL vanish (a paused proxy: no reset, no reply) runs long
// handlers. With the database out of reach nothing but the worker's own
// clock can stop them: each handler's context is cancelled with cause
// ErrLeaseDeadline, and has returned, before its lease ends in the
// database, so that no job runs on after its lease while a second worker,
// which reaps the leases, runs the same jobs; each cancellation is counted
// in queues_lease_lost_total{reason="local_deadline"}.
func TestPartitionedWorkerStopsAtItsLease(t *testing.T) {
	testdb.SkipShort(t, "a partition drill through a proxy (two workers, seconds of leases)")
	ctx := context.Background()
	dbURL := testdb.URL(t)
	direct := testdb.Pool(t, dbURL)
	_, err := direct.Exec(ctx, leaseLog)
	require.NoError(t, err)
	proxy := startPartitionProxy(t, serverAddr(t, dbURL))
	cut := testdb.Pool(t, throughProxy(t, dbURL, proxy.ln.Addr().String()))

	const n = 4
	const lease = 4 * time.Second
	var runs runLog
	started := make(chan int64, n)
	regA := prometheus.NewRegistry()
	a, err := NewClient(cut, ClientConfig{ID: "partitioned", Queues: map[string]QueueConfig{"drill": {Concurrency: n}},
		LeaseDuration: lease, PollInterval: 100 * time.Millisecond, Registerer: regA})
	require.NoError(t, err)
	a.Handle("long", func(ctx context.Context, j *Job) error {
		r := attemptRun{worker: "partitioned", generation: j.LeaseGeneration, start: time.Now()}
		started <- j.ID
		<-ctx.Done() // a job longer than any lease
		r.end, r.cause = time.Now(), context.Cause(ctx)
		runs.add(j.ID, r)
		return ctx.Err()
	})
	for range n {
		_, err := EnqueueTx(ctx, direct, EnqueueParams{Queue: "drill", Kind: "long", MaxAttempts: 3})
		require.NoError(t, err)
	}
	require.NoError(t, a.Start(ctx))
	for range n {
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			t.Fatal("the partitioned worker did not start its jobs within 30s")
		}
	}
	// Let a renewal or two through first, then cut the worker off.
	time.Sleep(lease / 2)
	proxy.pause()
	partitioned := time.Now()

	b, err := NewClient(direct, ClientConfig{ID: "healthy", Queues: map[string]QueueConfig{"drill": {Concurrency: n}},
		LeaseDuration: lease, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	b.Handle("long", func(_ context.Context, j *Job) error {
		runs.add(j.ID, attemptRun{worker: "healthy", generation: j.LeaseGeneration, start: time.Now(), end: time.Now()})
		return nil
	})
	require.NoError(t, b.Start(ctx))
	t.Cleanup(func() {
		proxy.resume()
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = a.Stop(sctx)
		_ = b.Stop(sctx)
	})

	deadline := time.Now().Add(60 * time.Second)
	for {
		var done int
		require.NoError(t, direct.QueryRow(ctx, "SELECT count(*) FROM jobs WHERE status = 'done'").Scan(&done))
		if done == n {
			break
		}
		require.True(t, time.Now().Before(deadline), "only %d of %d jobs done 60s after the partition", done, n)
		time.Sleep(50 * time.Millisecond)
	}

	all := runs.snapshot()
	require.Len(t, all, n)
	for id, rs := range all {
		var first, second *attemptRun
		for i := range rs {
			switch rs[i].worker {
			case "partitioned":
				first = &rs[i]
			case "healthy":
				second = &rs[i]
			}
		}
		require.NotNil(t, first, "job %d: the partitioned worker's run was not recorded (its handler never returned)", id)
		require.NotNil(t, second, "job %d: the healthy worker never ran it", id)
		require.ErrorIs(t, first.cause, ErrLeaseDeadline, "job %d: the partitioned handler was not cancelled by its lease deadline", id)
		require.ErrorIs(t, first.cause, ErrLeaseLost)

		var leaseEnd time.Time
		require.NoError(t, direct.QueryRow(ctx, "SELECT max(lease_until) FROM lease_log WHERE job_id = $1 AND generation = $2",
			id, first.generation).Scan(&leaseEnd))
		require.True(t, first.end.Before(leaseEnd),
			"job %d: the partitioned handler returned at %s, after its lease ended in the database at %s",
			id, first.end.Format(time.StampMilli), leaseEnd.Format(time.StampMilli))
		t.Logf("job %d: partitioned handler returned %s after the partition, %s before its lease ended in the database; the healthy worker started it %s after that",
			id, first.end.Sub(partitioned).Round(time.Millisecond), leaseEnd.Sub(first.end).Round(time.Millisecond),
			second.start.Sub(first.end).Round(time.Millisecond))
		require.True(t, first.end.Before(second.start),
			"job %d: the partitioned worker's run (until %s) overlaps the healthy worker's (from %s)",
			id, first.end.Format(time.StampMilli), second.start.Format(time.StampMilli))
		require.True(t, first.end.After(partitioned), "job %d: cancelled before the partition", id)
		require.Less(t, first.end.Sub(partitioned), lease, "job %d: cancelled later than a lease after the partition", id)
	}
	lost, err := metricsum.Counter(regA, "queues_lease_lost_total", "reason", "local_deadline")
	require.NoError(t, err)
	require.Equal(t, float64(n), lost)
}
