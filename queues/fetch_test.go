package queues

import (
	"context"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestReserveExtremeRates: a huge rate never turns the token count into a
// negative claim (which spun the fetcher), and a tiny one never overflows
// the wait into one that ends at once.
func TestReserveExtremeRates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		rate float64
	}{{"Huge", 1e19}, {"MaxFloat", math.MaxFloat64}, {"Tiny", 5e-324}, {"Small", 0.001}} {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueueRunner("r", QueueConfig{Concurrency: 10}, 100)
			q.rate = tc.rate
			now := time.Now()
			total := 0
			for i := range 50 {
				n, wait := q.reserve(now.Add(time.Duration(i) * time.Hour))
				require.GreaterOrEqual(t, n, 0)
				require.LessOrEqual(t, n, 10)
				require.GreaterOrEqual(t, q.inFlight, 0)
				require.LessOrEqual(t, q.inFlight, 10)
				if n == 0 && q.inFlight < 10 {
					require.Positive(t, wait, "no tokens: wait before trying again")
					require.LessOrEqual(t, wait, maxTokenWait)
				}
				total += n
				q.settle(n, n, false, false)
				q.inFlight -= n // the jobs ran
			}
			if tc.rate >= 1 {
				require.Positive(t, total, "a high rate claims")
			}
		})
	}
}

// TestReserveNonPositiveLimit: a concurrency of zero or below (SetConcurrency
// clamps it; the gate must hold anyway) gives no slots and takes no tokens,
// so raising it again claims no more than the new limit.
func TestReserveNonPositiveLimit(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{0, -1, -1 << 40} {
		q := newQueueRunner("r", QueueConfig{Concurrency: 10}, 100)
		q.rate = 1000
		q.tokens = 5
		q.limit = limit
		now := time.Now()
		for i := range 3 {
			n, _ := q.reserve(now.Add(time.Duration(i) * time.Millisecond))
			require.Zero(t, n, "limit %d: no slots", limit)
		}
		require.Zero(t, q.inFlight, "limit %d", limit)
		require.LessOrEqual(t, q.tokens, 10.0, "limit %d: tokens stay within one claim's worth", limit)
		q.limit = 2
		n, _ := q.reserve(now.Add(time.Second))
		require.LessOrEqual(t, n, 2, "limit %d then 2", limit)
		require.LessOrEqual(t, q.inFlight, 2)
	}

	pool := testdb.New(t)
	c, err := NewClient(pool, ClientConfig{Queues: map[string]QueueConfig{"r": {Concurrency: 4}}})
	require.NoError(t, err)
	require.NoError(t, c.SetConcurrency("r", -3))
	n, _ := c.queues["r"].reserve(time.Now())
	require.Zero(t, n)
	require.Zero(t, c.queues["r"].limit, "a negative concurrency is stored as zero")
}

// TestTokenWaitBounds: the wait for a token is finite and positive whatever
// the rate.
func TestTokenWaitBounds(t *testing.T) {
	t.Parallel()
	for _, rate := range []float64{5e-324, 1e-300, 0.001, 1, 1e19, math.Inf(1), math.NaN()} {
		w := tokenWait(1, rate)
		require.GreaterOrEqual(t, w, time.Millisecond, "rate %g", rate)
		require.LessOrEqual(t, w, maxTokenWait, "rate %g", rate)
	}
}

// TestRateBoundsChecked: the database refuses rates the engines cannot
// work with, in queue_settings and relay_settings alike.
func TestRateBoundsChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := testdb.Tx(t)
	for _, rate := range []float64{1e19, 5e-324, 1e7} {
		_, err := tx.Exec(ctx, "SAVEPOINT s")
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "INSERT INTO queue_settings (queue, rate_per_second) VALUES ('q', $1)", rate)
		require.ErrorContains(t, err, "queue_settings_rate_bounds", "rate %g", rate)
		_, err = tx.Exec(ctx, "ROLLBACK TO SAVEPOINT s")
		require.NoError(t, err)
		_, err = tx.Exec(ctx, "UPDATE relay_settings SET rate_per_second = $1", rate)
		require.ErrorContains(t, err, "relay_settings_rate_bounds", "rate %g", rate)
		_, err = tx.Exec(ctx, "ROLLBACK TO SAVEPOINT s")
		require.NoError(t, err)
	}
	_, err := tx.Exec(ctx, "INSERT INTO queue_settings (queue, rate_per_second) VALUES ('q', 0.5)")
	require.NoError(t, err)
}

// TestClaimsWaitForOutcomeWrites: claims stop while twice the queue's limit
// of finished jobs wait for their outcome to be written (the database is
// behind), and the fetcher is woken as soon as the writes fall below it.
func TestClaimsWaitForOutcomeWrites(t *testing.T) {
	t.Parallel()
	q := newQueueRunner("r", QueueConfig{Concurrency: 10}, 100)
	now := time.Now()
	q.backlog = true
	q.writing = 19 // every handler returned; 19 outcomes to write
	n, _ := q.reserve(now)
	require.Positive(t, n, "under twice the limit waiting, claims go on")
	q.settle(n, n, false, false) // a full claim: the queue has a backlog
	q.inFlight -= n              // its jobs ran

	q.writing = 20
	n, _ = q.reserve(now)
	require.Zero(t, n, "twice the limit waiting: no claim")
	select {
	case <-q.wake:
	default:
	}
	q.outcomesWritten(1)
	select {
	case <-q.wake:
	default:
		t.Fatal("the fetcher is not woken when the writes fall below twice the limit")
	}
	n, _ = q.reserve(now)
	require.Positive(t, n)
}

// TestBacklogClaimsSideBySide: while a queue has a backlog, the slots its
// handlers free during a claim start a second claim beside it at once,
// rather than when the first returns, so the database always has the next
// claim in hand. A trigger makes every claim take 150 ms (less than the
// fetcher counts slow) and records when it ran; pairs of claims must
// overlap by at least half of that.
func TestBacklogClaimsSideBySide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := testdb.New(t)
	_, err := pool.Exec(ctx, `
		CREATE TABLE claim_spans (started timestamptz NOT NULL, ended timestamptz NOT NULL);
		CREATE FUNCTION slow_claim() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT FROM new_rows n JOIN old_rows o USING (id) WHERE o.status = 'ready' AND n.status = 'running') THEN
				PERFORM pg_sleep(0.15);
				INSERT INTO claim_spans VALUES (statement_timestamp(), clock_timestamp());
			END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER slow_claim AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
			FOR EACH STATEMENT EXECUTE FUNCTION slow_claim();`)
	require.NoError(t, err)
	const backlog = 200
	_, err = EnqueueCopy(ctx, pool, slices.Repeat([]EnqueueParams{{Queue: "sb", Kind: "noop"}}, backlog))
	require.NoError(t, err)
	var handled atomic.Int64
	cfg := testConfig(map[string]QueueConfig{"sb": {Concurrency: 20}})
	cfg.MaxClaim = 10 // two claims fill the slots; half of them free is a batch
	// No poll during the test: a claim starts only when woken or when the
	// last one returns.
	cfg.PollInterval = time.Minute
	startClient(t, pool, cfg, func(c *Client) {
		c.Handle("noop", func(context.Context, *Job) error {
			handled.Add(1)
			return nil
		})
	})
	testdb.Eventually(t, 60*time.Second, "the backlog worked", func() bool { return handled.Load() == backlog })
	var claims, overlapping int
	require.NoError(t, pool.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM claim_spans),
		       (SELECT count(*) FROM claim_spans a JOIN claim_spans b ON a.started < b.started
		         AND b.started < a.ended - interval '75 milliseconds')`).Scan(&claims, &overlapping))
	t.Logf("%d claims, %d pairs side by side", claims, overlapping)
	require.GreaterOrEqual(t, claims, backlog/10)
	require.GreaterOrEqual(t, overlapping, claims/3, "the backlog was claimed one statement at a time")
}

// One rescan from the head runs at a time and the claims beside it resume
// after the cursor; the next rescan waits rescanSpacing times as long as the
// recent rescans took (behind a pinned xmin horizon a rescan takes seconds,
// every time), and ClaimRescan when that is longer. One slow rescan among
// fast ones (a stall of the process) does not put the next off.
func TestClaimRescanSpacing(t *testing.T) {
	t.Parallel()
	q := newQueueRunner("q", QueueConfig{Concurrency: 10}, 10)
	t0 := time.Now()
	from, head := q.claimFrom(t0, time.Second)
	require.Nil(t, from)
	require.False(t, head, "no cursor yet: every claim starts from the head, none is a rescan")
	q.advance(t0, []Job{{ID: 7, AvailableAt: t0}}, false, false)
	cursor := q.cursor
	require.NotNil(t, cursor)

	from, head = q.claimFrom(t0.Add(500*time.Millisecond), time.Second)
	require.Equal(t, cursor, from)
	require.False(t, head)

	from, head = q.claimFrom(t0.Add(time.Second), time.Second)
	require.Nil(t, from)
	require.True(t, head, "a second after the cursor began: a rescan")
	from, head = q.claimFrom(t0.Add(2*time.Second), time.Second)
	require.Equal(t, cursor, from, "a claim beside a rescan resumes after the cursor")
	require.False(t, head)

	rescanned := func(at time.Time, took time.Duration) {
		q.claimEnded(at, claimResult{fromHead: true, rescan: true, took: took})
	}
	// The first rescans (they open the pool's connections) space nothing.
	end := t0.Add(4 * time.Second)
	rescanned(end, 3*time.Second)
	_, head = q.claimFrom(end.Add(time.Second), time.Second)
	require.True(t, head, "the process's first rescan put the next off")
	rescanned(end, 3*time.Second)
	_, head = q.claimFrom(end.Add(time.Second), time.Second)
	require.True(t, head)

	// Three rescans took 3 s each: the next waits 60 s after the last ended.
	rescanned(end, 3*time.Second)
	from, head = q.claimFrom(end.Add(59*time.Second), time.Second)
	require.Equal(t, cursor, from)
	require.False(t, head)
	_, head = q.claimFrom(end.Add(rescanSpacing*3*time.Second), time.Second)
	require.True(t, head)

	// A fast rescan: ClaimRescan bounds the wait again.
	rescanned(end, time.Millisecond)
	_, head = q.claimFrom(end.Add(999*time.Millisecond), time.Second)
	require.False(t, head)
	_, head = q.claimFrom(end.Add(time.Second), time.Second)
	require.True(t, head)

	// One slow rescan after fast ones: still ClaimRescan.
	rescanned(end, time.Millisecond)
	rescanned(end, 3*time.Second)
	_, head = q.claimFrom(end.Add(time.Second), time.Second)
	require.True(t, head, "one slow rescan among fast ones put the next off")
	// Slow every time: spaced by the cost again.
	rescanned(end, 2*time.Second)
	rescanned(end, 4*time.Second)
	_, head = q.claimFrom(end.Add(rescanSpacing*2*time.Second-time.Millisecond), time.Second)
	require.False(t, head, "three slow rescans in a row: the next waits twenty times the cheapest")
	_, head = q.claimFrom(end.Add(rescanSpacing*2*time.Second), time.Second)
	require.True(t, head)
}

// TestShortClaimKeepsCursorBehindCostlyHead: a short claim sends the next
// one to the head while the head is cheap to walk, and keeps the cursor
// once claims from the head cost several times those after it (a pinned
// horizon's dead entries), until the head is cheap again.
func TestShortClaimKeepsCursorBehindCostlyHead(t *testing.T) {
	t.Parallel()
	q := newQueueRunner("q", QueueConfig{Concurrency: 10}, 10)
	t0 := time.Now()
	job := func(id int64) []Job {
		return []Job{{ID: id, AvailableAt: t0.Add(time.Duration(id) * time.Millisecond)}}
	}
	took := func(head bool, d time.Duration) {
		for range 3 {
			q.claimEnded(t0, claimResult{fromHead: head, took: d})
		}
	}

	q.advance(t0, job(1), false, false)
	require.NotNil(t, q.cursor)
	q.advance(t0, job(2), true, false)
	require.Nil(t, q.cursor, "nothing known of the costs: a short claim starts the next from the head")

	took(false, time.Millisecond)
	took(true, 2*time.Millisecond)
	q.advance(t0, job(3), false, false)
	q.advance(t0, job(4), true, false)
	require.Nil(t, q.cursor, "a cheap head: a short claim starts the next from the head")

	took(true, 50*time.Millisecond)
	q.advance(t0, job(5), false, false)
	q.advance(t0, job(6), true, false)
	require.NotNil(t, q.cursor, "a short claim behind a costly head cleared the cursor")
	require.Equal(t, int64(6), q.cursor.ID, "the cursor moves past what the short claim took")
	q.advance(t0, nil, true, false)
	require.NotNil(t, q.cursor, "an empty claim behind a costly head cleared the cursor")
	require.Equal(t, int64(6), q.cursor.ID)

	// A rescan that comes back full found a backlog behind the cursor (a
	// higher priority): the claims resume after the rescan, not after the
	// old cursor, which would leave that backlog to one rescan at a time.
	urgent := []Job{{ID: 20, Priority: 5, AvailableAt: t0}, {ID: 21, Priority: 5, AvailableAt: t0}}
	q.advance(t0, urgent, true, true)
	require.Equal(t, int64(6), q.cursor.ID, "a short rescan moved the cursor back")
	q.advance(t0, urgent, false, true)
	require.Equal(t, ClaimKey{Priority: 5, AvailableAt: t0, ID: 21}, *q.cursor,
		"a full rescan left the claims resuming after the old cursor, past the backlog it found")

	took(true, 3*time.Millisecond)
	q.advance(t0, nil, true, false)
	require.Nil(t, q.cursor, "the head is cheap again: a short claim starts the next from the head")
}
