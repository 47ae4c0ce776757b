package queues

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

func TestDedupeKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	first := enqueueT(t, tx, EnqueueParams{Queue: "dd", Kind: "k", DedupeKey: "order-1"})
	dup, err := EnqueueTx(ctx, tx, EnqueueParams{Queue: "dd", Kind: "k", DedupeKey: "order-1"})
	require.ErrorIs(t, err, ErrDuplicate)
	require.Equal(t, first.ID, dup.ID, "the holder is returned")
	// Another queue, or no key, is not a duplicate.
	enqueueT(t, tx, EnqueueParams{Queue: "dd2", Kind: "k", DedupeKey: "order-1"})
	enqueueT(t, tx, EnqueueParams{Queue: "dd", Kind: "k"})
	// Still held while running.
	c := claimOne(t, tx, "dd", "w", time.Minute)
	require.Equal(t, first.ID, c.ID)
	_, err = EnqueueTx(ctx, tx, EnqueueParams{Queue: "dd", Kind: "k", DedupeKey: "order-1"})
	require.ErrorIs(t, err, ErrDuplicate)
	// Free again once finished.
	require.NoError(t, JobAck(ctx, tx, c.ID, "w", c.LeaseGeneration))
	again := enqueueT(t, tx, EnqueueParams{Queue: "dd", Kind: "k", DedupeKey: "order-1"})
	require.NotEqual(t, first.ID, again.ID)

	ids, err := EnqueueManyTx(ctx, tx, []EnqueueParams{
		{Queue: "dd", Kind: "k", DedupeKey: "order-1"}, // held by again
		{Queue: "dd", Kind: "k", DedupeKey: "order-2"},
		{Queue: "dd", Kind: "k", DedupeKey: "order-2"}, // same batch
		{Queue: "dd", Kind: "k"},
	})
	require.NoError(t, err)
	require.Len(t, ids, 4)
	require.Zero(t, ids[0])
	require.NotZero(t, ids[1])
	require.Zero(t, ids[2])
	require.Greater(t, ids[3], ids[1])
}

func TestEnqueueMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	var ps []EnqueueParams
	for i := range 500 {
		ps = append(ps, EnqueueParams{Queue: fmt.Sprintf("m%d", i%3), Kind: "k", Payload: map[string]int{"i": i},
			Priority: int16(i % 4), TenantID: "t1"})
	}
	ps[7].RunAt = time.Now().Add(time.Hour)
	ps[8].Payload = json.RawMessage(`{"raw":true}`)
	ids, err := EnqueueManyTx(ctx, tx, ps)
	require.NoError(t, err)
	require.Len(t, ids, 500)
	for i := 1; i < len(ids); i++ {
		require.Greater(t, ids[i], ids[i-1])
	}
	j, err := JobGet(ctx, tx, ids[8])
	require.NoError(t, err)
	require.JSONEq(t, `{"raw":true}`, string(j.Payload))
	require.Equal(t, "m2", j.Queue)
	j, _ = JobGet(ctx, tx, ids[7])
	require.True(t, j.AvailableAt.After(time.Now().Add(50*time.Minute)))
	require.Equal(t, "t1", *j.TenantID)
	_, err = EnqueueManyTx(ctx, tx, []EnqueueParams{{Queue: "", Kind: "k"}})
	require.Error(t, err)
}

// TestNotifyCoalesced checks that a batch enqueue sends one notification per
// queue, not one per row.
func TestNotifyCoalesced(t *testing.T) {
	t.Parallel()
	got := notificationsOf(t, func(pool *pgxpool.Pool) {
		var ps []EnqueueParams
		for range 50 {
			ps = append(ps, EnqueueParams{Queue: "n1", Kind: "k"}, EnqueueParams{Queue: "n2", Kind: "k"})
		}
		_, err := EnqueueManyTx(context.Background(), pool, ps)
		require.NoError(t, err)
	})
	require.Equal(t, map[string]int{"n1": 1, "n2": 1}, got)
}

// notificationsOf runs send on a database of its own and returns the
// NOTIFYs on NotifyChannel it caused, counted by payload (the queue).
func notificationsOf(t *testing.T, send func(pool *pgxpool.Pool)) map[string]int {
	t.Helper()
	ctx := context.Background()
	url := testdb.URL(t)
	listener, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer listener.Close(ctx)
	_, err = listener.Exec(ctx, "LISTEN "+NotifyChannel)
	require.NoError(t, err)
	pool := testdb.Pool(t, url)
	send(pool)
	_, err = pool.Exec(ctx, "SELECT pg_notify($1, 'end')", NotifyChannel)
	require.NoError(t, err)
	got := map[string]int{}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		n, err := listener.WaitForNotification(wctx)
		require.NoError(t, err)
		if n.Payload == "end" {
			return got
		}
		got[n.Payload]++
	}
}

func TestEnqueueCopy100k(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	n := 100_000
	if testing.Short() {
		n = 5_000 // the same checks; the volume is the full suite's
	}
	ps := slices.Repeat([]EnqueueParams{{Queue: "copy", Kind: "noop", Payload: json.RawMessage(`{"x":1}`)}}, n)
	ps[0].RunAt = time.Now().Add(time.Hour)
	ps[1].DedupeKey = "k1"
	start := time.Now()
	got, err := EnqueueCopy(ctx, pool, ps)
	require.NoError(t, err)
	t.Logf("COPY enqueue of %d jobs: %s (%.0f rows/s)", n, time.Since(start), float64(n)/time.Since(start).Seconds())
	require.EqualValues(t, n, got)
	var count, ready, scheduled int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'ready'),
		count(*) FILTER (WHERE available_at > clock_timestamp() + interval '50 minutes')
		FROM jobs WHERE queue = 'copy' AND payload = '{"x":1}' AND max_attempts = $1`, DefaultMaxAttempts).Scan(&count, &ready, &scheduled))
	require.EqualValues(t, n, count)
	require.EqualValues(t, n, ready)
	require.EqualValues(t, 1, scheduled)
	// COPY cannot skip a held dedupe key: the whole call fails.
	_, err = EnqueueCopy(ctx, pool, []EnqueueParams{{Queue: "copy", Kind: "noop", DedupeKey: "k1"}})
	require.Error(t, err)
}

// TestEnqueueBurstNotifiesOnceAndRunsAll: of a burst of enqueues on one
// queue only the first notifies, yet with polling effectively off every job
// starts: the worker woken by the first keeps claiming while its claims
// find jobs. The rest of the burst must land within NotifyInterval of the
// claim that found the first, as a busy enqueuer's do; on a machine so
// loaded that the test's own INSERT lands later (measured on the server's
// clock), the window had closed and the burst is run again.
func TestEnqueueBurstNotifiesOnceAndRunsAll(t *testing.T) {
	t.Parallel()
	for attempt := 1; ; attempt++ {
		inWindow, ranAll := enqueueBurst(t)
		if ranAll {
			return
		}
		require.False(t, inWindow, "jobs enqueued without a NOTIFY did not start: busy polling is not working")
		require.Less(t, attempt, 5, "the burst's INSERT never landed within NotifyInterval of the first claim")
		t.Logf("attempt %d: the INSERT landed after the busy window; running the burst again", attempt)
	}
}

// notifyOnlyClient starts a client on a database of its own whose queue
// only NOTIFY and busy polling deliver (the poll is an hour away), with
// afterClaim as its claim hook when not nil. Each job of kind "b" it runs
// is sent on ran; stop stops the client.
func notifyOnlyClient(t *testing.T, queue string, afterClaim func(sent time.Time, jobs int)) (pool *pgxpool.Pool, ran chan int64, stop func()) {
	pool = testdb.New(t)
	cfg := testConfig(map[string]QueueConfig{queue: {Concurrency: 4}})
	cfg.PollInterval = time.Hour
	ran = make(chan int64, 16)
	c := startClient(t, pool, cfg, func(c *Client) {
		c.Handle("b", func(_ context.Context, j *Job) error {
			ran <- j.ID
			return nil
		})
		c.afterClaim = afterClaim
	})
	waitListening(t, pool)
	return pool, ran, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c.Stop(ctx)
	}
}

// enqueueBurst runs one burst on a database of its own: whether the
// jobs sent without a NOTIFY landed within NotifyInterval of the first
// job's claim, and whether all of them started.
func enqueueBurst(t *testing.T) (inWindow, ranAll bool) {
	ctx := context.Background()
	pool, ran, stop := notifyOnlyClient(t, "burst", nil)
	defer stop()
	// The first enqueue notifies; the rest are those a busy enqueuer sends
	// within NotifyInterval of it, without a NOTIFY, in one statement.
	rows, err := pool.Query(ctx, sqlText("job_insert"), "burst", "b", []byte("{}"), 0, nil, 8, "", "", true)
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowToStructByName[insertedJob])
	require.NoError(t, err)
	require.EqualValues(t, 1, got[0].Notified)
	first := <-ran // the first is running: the worker's claims found jobs
	var late bool
	require.NoError(t, pool.QueryRow(ctx, `WITH burst AS (
			INSERT INTO jobs (queue, kind) SELECT 'burst', 'b' FROM generate_series(1, 5) RETURNING 1)
		SELECT clock_timestamp() - started_at >= $2 * interval '1 millisecond' FROM jobs WHERE id = $1`,
		first, NotifyInterval.Milliseconds()).Scan(&late))
	deadline := time.After(3 * time.Second)
	for range 5 {
		select {
		case <-ran:
		case <-deadline:
			return !late, false
		}
	}
	return !late, true
}

// TestBusyWindowOutlastsASlowClaim: busy polling ends with the first claim
// sent after the window, not the first that returns after it. A claim sent
// within the window that comes back late read the queue early: jobs
// committed after its read, without a NOTIFY, are found by one more claim
// instead of waiting for the poll (an hour here).
func TestBusyWindowOutlastsASlowClaim(t *testing.T) {
	t.Parallel()
	for attempt := 1; ; attempt++ {
		held, ranAll := slowClaimInWindow(t)
		if held {
			require.True(t, ranAll, "jobs committed while a claim sent within the busy window was slow did not start")
			return
		}
		require.Less(t, attempt, 5, "no empty claim was sent within NotifyInterval of the claim that found the first job")
		t.Logf("attempt %d: the held claim was sent after the busy window; running again", attempt)
	}
}

// slowClaimInWindow holds back the first empty claim after a claim found a
// job, commits jobs without a NOTIFY meanwhile, and lets the claim return
// once the busy window has passed. held reports whether that claim was sent
// within NotifyInterval of the one that found the job (so inside the
// window); ranAll whether the jobs committed meanwhile all started.
func slowClaimInWindow(t *testing.T) (held, ranAll bool) {
	ctx := context.Background()
	var foundSent atomic.Int64 // unix ns: when the claim that found a job was sent
	var armed atomic.Bool
	blocked := make(chan time.Time, 1)
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	pool, ran, stop := notifyOnlyClient(t, "slow", func(sent time.Time, jobs int) {
		if jobs > 0 {
			foundSent.CompareAndSwap(0, sent.UnixNano())
			return
		}
		if armed.CompareAndSwap(true, false) {
			blocked <- sent
			<-release
		}
	})
	defer stop()
	defer releaseOnce() // a failure before the release must not leave a claim held through Stop
	_, err := EnqueueTx(ctx, pool, EnqueueParams{Queue: "slow", Kind: "b"})
	require.NoError(t, err)
	<-ran
	armed.Store(true)
	var sent time.Time
	select {
	case sent = <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("no claim came after the one that found the job")
	}
	_, err = pool.Exec(ctx, "INSERT INTO jobs (queue, kind) SELECT 'slow', 'b' FROM generate_series(1, 5)")
	require.NoError(t, err)
	// The window closes NotifyInterval + BusyRepoll after the found claim
	// returned, which was before its job ran: this wait outlasts it.
	time.Sleep(NotifyInterval + 2*BusyRepoll)
	releaseOnce()
	held = sent.Sub(time.Unix(0, foundSent.Load())) < NotifyInterval
	deadline := time.After(5 * time.Second)
	for range 5 {
		select {
		case <-ran:
		case <-deadline:
			return held, false
		}
	}
	return held, true
}

// TestNotifyDueOncePerInterval: EnqueueTx notifies a queue at most once per
// NotifyInterval from one process, each queue on its own.
func TestNotifyDueOncePerInterval(t *testing.T) {
	t.Parallel()
	require.True(t, notifyDue("due-a"), "the first enqueue of a queue notifies")
	require.False(t, notifyDue("due-a"), "the next one within NotifyInterval does not")
	require.True(t, notifyDue("due-b"), "queues are debounced separately")
	time.Sleep(NotifyInterval)
	require.True(t, notifyDue("due-a"), "after NotifyInterval it notifies again")
}

// TestEnqueueTxReturnsTheStoredJob: the job EnqueueTx returns is the row as
// stored, field for field, with and without a dedupe key (the two take
// different statements; the one without fills in most fields itself).
func TestEnqueueTxReturnsTheStoredJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	for _, p := range []EnqueueParams{
		{Queue: "stored", Kind: "k"},
		{Queue: "stored", Kind: "k", Payload: json.RawMessage(`{"b": 1,   "a":[2, 3]}`), Priority: 3,
			RunAt: time.Now().Add(time.Hour), MaxAttempts: 5, TenantID: "acme"},
		{Queue: "stored", Kind: "k", Payload: map[string]string{"x": "y"}, DedupeKey: "d-1", TenantID: "acme"},
	} {
		got, err := EnqueueTx(ctx, tx, p)
		require.NoError(t, err)
		stored, err := JobGet(ctx, tx, got.ID)
		require.NoError(t, err)
		require.Equal(t, stored, got, "key %q", p.DedupeKey)
	}
}

// TestEnqueueTxNotifiesWhenDue: a single-row enqueue sends the queue's
// NOTIFY when one is due for it in this process, and not again within
// NotifyInterval, with and without a dedupe key.
func TestEnqueueTxNotifiesWhenDue(t *testing.T) {
	t.Parallel()
	// Each queue gets two enqueues; the second is due no NOTIFY when it
	// starts within NotifyInterval of the first (a stalled machine may
	// take longer, and then it may notify).
	want := map[string]int{}
	run := time.Now().UnixNano() // notifyDue is per process: fresh queues for each run
	got := notificationsOf(t, func(pool *pgxpool.Pool) {
		for _, p := range []EnqueueParams{
			{Queue: fmt.Sprintf("due-new-%d", run), Kind: "k"},
			{Queue: fmt.Sprintf("due-key-%d", run), Kind: "k", DedupeKey: "a"},
		} {
			first := time.Now()
			_, err := EnqueueTx(context.Background(), pool, p)
			require.NoError(t, err)
			p.DedupeKey = strings.ToUpper(p.DedupeKey)
			want[p.Queue] = 1
			if time.Since(first) >= NotifyInterval {
				want[p.Queue] = 2
			}
			_, err = EnqueueTx(context.Background(), pool, p)
			require.NoError(t, err)
		}
	})
	for q, n := range want {
		if n == 2 { // slow: the second enqueue may or may not have been due one
			require.Contains(t, []int{1, 2}, got[q], q)
			delete(got, q)
			delete(want, q)
		}
	}
	require.Equal(t, want, got, "one NOTIFY per queue: the first enqueue's")
}
