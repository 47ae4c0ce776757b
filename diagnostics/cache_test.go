package diagnostics_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/diagnostics"
	"github.com/pgconsole/console/internal/testdb"
)

// fakeClock is a Config.NowFunc that moves only when a test advances it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 6, 20, 14, 3, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// failedCheck reports whether check is among r's unavailable checks.
func failedCheck(r diagnostics.Round, check string) bool {
	for _, u := range r.Unavailable {
		if name, _, _ := strings.Cut(u.Check, " "); name == check {
			return true
		}
	}
	return false
}

// Two overview requests that arrive while a round runs share it; the round
// is served until it is older than RoundMaxAge, then the next caller gets a
// new one.
func TestLatestRoundIsShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	clock := newFakeClock()
	// Timeouts long enough that the round waits for the lock below rather
	// than failing its check.
	d := open(t, dbURL, diagnostics.Config{NowFunc: clock.Now, RoundMaxAge: 3 * time.Second,
		LockTimeout: 30 * time.Second, StatementTimeout: 30 * time.Second, Budget: time.Minute})

	// The queue table is held, so the round, once started, runs until the
	// test lets it go: both callers arrive while it runs.
	holder := connect(t, dbURL, "round-holder")
	_, err := holder.Exec(ctx, "BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	t.Cleanup(func() { holder.Exec(context.Background(), "ROLLBACK") })

	type result struct {
		r   diagnostics.Round
		err error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			r, err := d.LatestRound(ctx, 0)
			results <- result{r, err}
		}()
	}
	watcher := connect(t, dbURL, "round-watcher")
	eventually(t, 20*time.Second, func() (bool, string) {
		var n int
		err := watcher.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`,
			diagnostics.ApplicationName).Scan(&n)
		return err == nil && n == 1, fmt.Sprintf("%d diagnostics backends wait for the lock (%v)", n, err)
	})

	// A caller that stops waiting gets its context's error, and starts no
	// round of its own.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_, err = d.LatestRound(gone, 0)
	require.ErrorIs(t, err, context.Canceled)

	_, err = holder.Exec(ctx, "ROLLBACK")
	require.NoError(t, err)
	a, b := <-results, <-results
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	require.False(t, a.r.At.IsZero())
	require.False(t, failedCheck(a.r, "queue_health"), "the round waited for the lock: %v", a.r.Unavailable)
	require.Equal(t, a.r.At, b.r.At, "both callers got the same round")
	require.EqualValues(t, 1, diagnostics.RoundsRun(d), "one round for three callers")

	clock.Advance(2 * time.Second)
	r, err := d.LatestRound(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, a.r.At, r.At, "a round younger than RoundMaxAge is served as is")
	require.EqualValues(t, 1, diagnostics.RoundsRun(d))

	clock.Advance(time.Second)
	r, err = d.LatestRound(ctx, 0)
	require.NoError(t, err)
	require.True(t, r.At.After(a.r.At), "a round as old as RoundMaxAge is run again")
	require.EqualValues(t, 2, diagnostics.RoundsRun(d))

	// A caller that accepts older rounds (the collector's Refresh) takes
	// the cached one.
	clock.Advance(10 * time.Second)
	again, err := d.LatestRound(ctx, time.Minute)
	require.NoError(t, err)
	require.Equal(t, r.At, again.At)
	require.EqualValues(t, 2, diagnostics.RoundsRun(d))
}

// A round that could not run (the database is not there) is shared for a
// second, not for RoundMaxAge, and never once the database answers.
func TestLatestRoundFailureExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin := testdb.AdminURL(t)
	name := fmt.Sprintf("appears_later_%d", time.Now().UnixNano())
	u, err := url.Parse(admin)
	require.NoError(t, err)
	u.Path = "/" + name
	clock := newFakeClock()
	d := open(t, u.String(), diagnostics.Config{NowFunc: clock.Now, RoundMaxAge: time.Minute})

	failed, err := d.LatestRound(ctx, 0)
	require.NoError(t, err, "a failed round is a round, not an error")
	require.True(t, failedCheck(failed, "server_info"), "%v", failed.Unavailable)
	again, err := d.LatestRound(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, failed.At, again.At, "callers within the second share the failed round")
	require.EqualValues(t, 1, diagnostics.RoundsRun(d))

	conn, err := pgx.Connect(ctx, admin)
	require.NoError(t, err)
	t.Cleanup(func() {
		conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		conn.Close(context.Background())
	})
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)

	clock.Advance(time.Second)
	r, err := d.LatestRound(ctx, 0)
	require.NoError(t, err)
	require.True(t, r.At.After(failed.At), "the failed round is not served after a second")
	require.False(t, failedCheck(r, "server_info") || failedCheck(r, "connect"), "%v", r.Unavailable)
	require.EqualValues(t, 2, diagnostics.RoundsRun(d))
}

// ServerInfo serves what it read for ServerInfoMaxAge (30s), then reads
// again, so a change (here pg_stat_statements going away; after a failover,
// the role) shows without a restart.
func TestServerInfoRereadsAfterMaxAge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := testdb.URL(t)
	pool := testdb.Pool(t, dbURL)
	clock := newFakeClock()
	d := open(t, dbURL, diagnostics.Config{NowFunc: clock.Now})

	info, err := d.ServerInfo(ctx)
	require.NoError(t, err)
	require.True(t, info.HasPgStatStatements)
	require.False(t, info.InRecovery)
	_, err = pool.Exec(ctx, "DROP EXTENSION pg_stat_statements")
	require.NoError(t, err)

	clock.Advance(29 * time.Second)
	info, err = d.ServerInfo(ctx)
	require.NoError(t, err)
	require.True(t, info.HasPgStatStatements, "served from the cache within 30s")

	clock.Advance(time.Second)
	info, err = d.ServerInfo(ctx)
	require.NoError(t, err)
	require.False(t, info.HasPgStatStatements, "read again after 30s")
}

// Invalidate while a load runs: callers that were already waiting take that
// load's result, callers that come after wait for it to end and get a new
// one, and only one load runs at a time.
func TestCacheInvalidateDuringLoad(t *testing.T) {
	t.Parallel()
	var calls, running, overlap atomic.Int64
	started := make(chan int64, 4)
	release := make(chan struct{})
	c := diagnostics.NewCache(func(context.Context) (int64, error) {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		defer running.Add(-1)
		n := calls.Add(1)
		started <- n
		<-release
		return n, nil
	}, diagnostics.CacheConfig{MaxAge: time.Hour})
	get := func() <-chan int64 {
		out := make(chan int64, 1)
		go func() {
			v, err := c.Get(context.Background(), 0)
			if err != nil {
				v = -1
			}
			out <- v
		}()
		return out
	}

	before := get()
	require.EqualValues(t, 1, <-started)
	c.Invalidate()
	after := get()
	release <- struct{}{}
	require.EqualValues(t, 1, <-before, "a caller waiting before Invalidate takes the running load")
	require.EqualValues(t, 2, <-started, "a caller after Invalidate gets a load of its own")
	release <- struct{}{}
	require.EqualValues(t, 2, <-after)

	v, err := c.Get(context.Background(), 0)
	require.NoError(t, err)
	require.EqualValues(t, 2, v, "the new load is cached")
	require.EqualValues(t, 2, calls.Load())
	require.Zero(t, overlap.Load(), "loads never overlap")

	boom := diagnostics.NewCache(func(context.Context) (int, error) { panic("boom") }, diagnostics.CacheConfig{})
	_, err = boom.Get(context.Background(), 0)
	require.Error(t, err)
	require.False(t, errors.Is(err, context.Canceled))
	require.Contains(t, err.Error(), "boom")
}
