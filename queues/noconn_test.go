package queues

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/logbuf"
	"github.com/pgconsole/console/internal/metricsum"
	"github.com/pgconsole/console/internal/testdb"
)

// TestNoConnectionSpendsNoAttempt: jobs whose handlers cannot get a
// database connection because other clients hold every slot of the server
// are handed back without spending an attempt (jobs with a single attempt
// do not go dead), counted as no_connection, and all run once the slots
// are free.
func TestNoConnectionSpendsNoAttempt(t *testing.T) {
	testdb.SkipShort(t, "a server of its own")
	t.Parallel()
	ctx := context.Background()
	_, url := migratedServer(t, map[string]string{"max_connections": "14", "superuser_reserved_connections": "0"})

	admin := testdb.Pool(t, url)
	// More jobs at once than the engine's pool ever has idle connections
	// (its claims, renewals and listener use a few): most handlers must
	// open a connection of their own, which the full server refuses.
	const n = 10
	ids := make([]int64, n)
	for i := range ids {
		j, err := EnqueueTx(ctx, admin, EnqueueParams{Queue: "squeezed", Kind: "conn", MaxAttempts: 1})
		require.NoError(t, err)
		ids[i] = j.ID
	}

	// Everyone else takes every slot the server has left.
	var others []*pgx.Conn
	release := func() {
		for _, o := range others {
			o.Close(ctx)
		}
		others = nil
	}
	defer release()

	pcfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	pcfg.MaxConns = 2 * n
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	var logs logbuf.Buffer
	reg := prometheus.NewRegistry()
	cfg := testConfig(map[string]QueueConfig{"squeezed": {Concurrency: n}})
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	cfg.Registerer = reg
	cfg.LeaseDuration = 10 * time.Second
	hold := make(chan struct{})
	startClient(t, pool, cfg, func(c *Client) {
		c.Handle("conn", func(ctx context.Context, _ *Job) error {
			<-hold
			conn, err := JobConn(ctx)
			if err != nil {
				return err
			}
			// Held together, so the pool cannot lend one connection to
			// several handlers in turn.
			_, err = conn.Exec(ctx, "SELECT pg_sleep(0.5)")
			return err
		})
	})
	testdb.Eventually(t, 30*time.Second, "the jobs running", func() bool {
		var running int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'running'`).Scan(&running))
		return running == n
	})
	for {
		o, err := pgx.Connect(ctx, url)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "53300" {
			break
		}
		require.NoError(t, err)
		others = append(others, o)
		require.Less(t, len(others), 20, "the server keeps accepting connections")
	}
	close(hold)
	testdb.Eventually(t, 30*time.Second, "a job handed back for want of a connection", func() bool {
		v, err := metricsum.Counter(reg, "queues_jobs_finished_total", "result", "no_connection")
		require.NoError(t, err)
		return v > 0
	})
	release()
	testdb.Eventually(t, 60*time.Second, "every job done once the slots are free", func() bool {
		var done int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE id = ANY($1) AND status = 'done'`, ids).Scan(&done))
		return done == n
	})
	var maxAttempts int
	require.NoError(t, admin.QueryRow(ctx, `SELECT max(attempts) FROM jobs WHERE id = ANY($1)`, ids).Scan(&maxAttempts))
	require.Equal(t, 1, maxAttempts, "waiting for a connection spent no attempt")
	require.Contains(t, logs.String(), "handed back without spending an attempt")
}
