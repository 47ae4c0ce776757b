package queues

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// TestEngineNeedsReadCommitted: on a database whose transactions default
// to REPEATABLE READ (a valid choice for the application that shares it),
// the engine's pool from PoolConfig still burns down a queue with
// concurrent claimers without one serialization failure, and a pool that
// keeps the stricter default is refused at start with what to do.
func TestEngineNeedsReadCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	setup := testdb.Pool(t, url)
	testdb.SetDatabaseDefault(t, url, "default_transaction_isolation", "repeatable read")

	t.Run("a pool with the stricter default is refused", func(t *testing.T) {
		plain := testdb.Pool(t, url)
		c, err := NewClient(plain, testConfig(map[string]QueueConfig{"iso": {Concurrency: 1}}))
		require.NoError(t, err)
		err = c.Start(ctx)
		require.ErrorContains(t, err, "default to REPEATABLE READ")
		require.ErrorContains(t, err, "queues.PoolConfig")
		r, err := NewRelay(plain, RelayConfig{Publisher: PublisherFunc(func(context.Context, *OutboxMessage) error { return nil })})
		require.NoError(t, err)
		require.ErrorContains(t, r.Start(ctx), "READ COMMITTED")
		s, err := NewScheduler(plain, SchedulerConfig{Interval: time.Second})
		require.NoError(t, err)
		require.ErrorContains(t, s.Start(ctx), "READ COMMITTED")
		var n int64
		require.NoError(t, setup.QueryRow(ctx, "SELECT count(*) FROM workers").Scan(&n))
		require.Zero(t, n, "a refused client registers no worker")
	})

	t.Run("PoolConfig pools burn down without serialization failures", func(t *testing.T) {
		const n = 3000
		_, err := EnqueueCopy(ctx, setup, slices.Repeat([]EnqueueParams{{Queue: "iso", Kind: "noop"}}, n))
		require.NoError(t, err)
		var clients []*Client
		for i := range 2 {
			pcfg, err := PoolConfig(url)
			require.NoError(t, err)
			pool, err := pgxpool.NewWithConfig(ctx, pcfg)
			require.NoError(t, err)
			t.Cleanup(pool.Close)
			cfg := testConfig(map[string]QueueConfig{"iso": {Concurrency: 8}})
			cfg.ID = fmt.Sprintf("iso-%d", i)
			cfg.LeaseDuration = 30 * time.Second
			clients = append(clients, startClient(t, pool, cfg, func(c *Client) {
				c.Handle("noop", func(context.Context, *Job) error { return nil })
			}))
		}
		testdb.Eventually(t, 60*time.Second, "all jobs done", func() bool {
			return countJobs(t, setup, "status = 'done'") == n
		})
		require.EqualValues(t, n, countJobs(t, setup, "attempts = 1"), "no job ran twice")
		for _, c := range clients {
			c.errs.mu.Lock()
			errs := slices.Clone(c.errs.list)
			c.errs.mu.Unlock()
			require.Empty(t, errs, "client %s met errors", c.ID())
		}
	})
}

// TestLongSessionsOutliveIdleSessionTimeout: on a database that ends idle
// sessions after half a second, the sessions the engine keeps open and
// mostly idle (the worker's LISTEN session, the relay's, the scheduler
// leader's) are not ended, even on a pool built without PoolConfig: they
// would take notifications and leadership with them every half second.
func TestLongSessionsOutliveIdleSessionTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.URL(t)
	setup := testdb.Pool(t, url)
	testdb.SetDatabaseDefault(t, url, "idle_session_timeout", "500ms")
	pool := testdb.Pool(t, url) // no PoolConfig: its own connections do time out

	c := startClient(t, pool, testConfig(map[string]QueueConfig{"idle": {Concurrency: 1}}), nil)
	r, err := NewRelay(pool, RelayConfig{Publisher: PublisherFunc(func(context.Context, *OutboxMessage) error { return nil }),
		PollInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	t.Cleanup(r.Stop)
	s, err := NewScheduler(pool, SchedulerConfig{Interval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, s.Start(ctx))
	t.Cleanup(s.Stop)

	sessions := func() (worker, relay, leader int64) {
		require.NoError(t, setup.QueryRow(ctx, `SELECT
			coalesce((SELECT backend_pid FROM workers WHERE id = $1), 0),
			coalesce((SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN '||$2), 0)`,
			c.ID(), OutboxChannel).Scan(&worker, &relay))
		return worker, relay, int64(s.pid.Load())
	}
	var w0, r0, l0 int64
	testdb.Eventually(t, 10*time.Second, "the three sessions are open", func() bool {
		w0, r0, l0 = sessions()
		return w0 != 0 && r0 != 0 && l0 != 0 && s.IsLeader()
	})
	time.Sleep(1500 * time.Millisecond) // three idle timeouts
	var alive int
	require.NoError(t, setup.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)",
		[]int64{w0, r0, l0}).Scan(&alive))
	require.Equal(t, 3, alive, "the worker's LISTEN, the relay's LISTEN and the scheduler leader's sessions are still open")
	w1, r1, l1 := sessions()
	require.Equal(t, []int64{w0, r0, l0}, []int64{w1, r1, l1}, "same sessions, not new ones")
	require.True(t, s.IsLeader())

	// PoolConfig's own connections do not time out either.
	pcfg, err := PoolConfig(url)
	require.NoError(t, err)
	configured, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	defer configured.Close()
	var timeout string
	require.NoError(t, configured.QueryRow(ctx, "SELECT current_setting('idle_session_timeout')").Scan(&timeout))
	require.Equal(t, "0", timeout)
}
