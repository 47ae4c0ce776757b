package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
	"github.com/pgconsole/console/queues"
)

// TestOpenPoolIsReadCommitted: the console's pools run READ COMMITTED even
// on a database whose transactions default to something stricter, because
// the actions and the engine are written for it.
func TestOpenPoolIsReadCommitted(t *testing.T) {
	ctx := context.Background()
	url := testdb.URL(t)
	testdb.SetDatabaseDefault(t, url, "default_transaction_isolation", "serializable")
	pool, err := openPool(ctx, url, "console-test", 2, nil, poolerConfig{})
	require.NoError(t, err)
	defer pool.Close()
	var level string
	require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting('transaction_isolation')").Scan(&level))
	require.Equal(t, "read committed", level)
}

// After a burst, the console's pools (the web pool and the engine's) close
// what the burst opened within a minute, back to their floor, on the pool
// and on the server: idle backends hold memory and slots of max_connections
// that a database under pressure needs back.
func TestPoolsIdleBackToTheFloor(t *testing.T) {
	testdb.SkipShort(t, "waits for idle connections to close (about 45s)")
	ctx := context.Background()
	url := testdb.URL(t)
	web, err := openPool(ctx, url, "console-burst-web", 8, nil, poolerConfig{})
	require.NoError(t, err)
	defer web.Close()
	ecfg, err := queues.PoolConfig(url)
	require.NoError(t, err)
	ecfg.ConnConfig.RuntimeParams["application_name"] = "console-burst-engine"
	ecfg.MaxConns = 8
	engine, err := pgxpool.NewWithConfig(ctx, ecfg)
	require.NoError(t, err)
	defer engine.Close()
	probe := testdb.Pool(t, url)

	for _, pool := range []*pgxpool.Pool{web, engine} {
		var conns []*pgxpool.Conn
		for range 8 {
			c, err := pool.Acquire(ctx)
			require.NoError(t, err)
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Release()
		}
		require.EqualValues(t, 8, pool.Stat().IdleConns(), "the burst left its connections idle")
	}
	backends := func() int {
		return testdb.Count(t, probe, `SELECT count(*) FROM pg_stat_activity WHERE application_name IN ('console-burst-web', 'console-burst-engine')`)
	}
	require.EqualValues(t, 16, backends())
	testdb.Eventually(t, 2*time.Minute, "the burst's connections to close", func() bool {
		return web.Stat().TotalConns() == web.Config().MinConns && engine.Stat().TotalConns() == engine.Config().MinConns && backends() == 0
	})
}
