package queues

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pgconsole/console/internal/testdb"
)

// stormFor is how long a storm drill disturbs the engine while jobs keep
// arriving.
const stormFor = 15 * time.Second

// A steady storm of pg_terminate_backend, every second on every engine
// connection (claims, renewals, acks, the listener, the heartbeat), while
// jobs keep arriving: no job is lost or completed twice, no worker exits,
// and work goes on at once when the storm ends.
func TestTerminateStormLosesNoJob(t *testing.T) {
	testdb.SkipShort(t, "a fifteen-second storm of terminated connections")
	t.Parallel()
	url := testdb.URL(t)
	admin := testdb.Pool(t, url)
	createRunLog(t, admin)
	kills := 0
	stormDrill(t, url, admin, func(ctx context.Context) {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE datname = current_database() AND application_name LIKE $1 || '%'`, ApplicationName).Scan(&n); err == nil {
				kills += n
			}
		}
	})
	t.Logf("terminated %d engine connections", kills)
	require.Positive(t, kills, "the storm terminated nothing")
}

// A server squeezed by 300 idle connections of other clients, with a
// handful of slots left: no job is lost or completed twice, no worker
// exits, and work goes on when the connections leave.
func TestIdleConnectionSqueezeLosesNoJob(t *testing.T) {
	testdb.SkipShort(t, "a server of its own held by 300 idle connections")
	t.Parallel()
	ctx := context.Background()
	const idle = 300
	_, url := migratedServer(t, map[string]string{"max_connections": "318", "shared_buffers": "32MB"})
	admin := testdb.Pool(t, url+"&pool_max_conns=4")
	createRunLog(t, admin)

	held := make([]*pgx.Conn, 0, idle)
	t.Cleanup(func() {
		for _, c := range held {
			c.Close(context.Background())
		}
	})
	for len(held) < idle {
		c, err := pgx.Connect(ctx, url)
		require.NoError(t, err, "idle connection %d", len(held)+1)
		held = append(held, c)
	}
	left := testdb.Count(t, admin, "SELECT current_setting('max_connections')::int - count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
	t.Logf("%d idle connections held, %d slots left", len(held), left)
	stormDrill(t, url, admin, func(ctx context.Context) {
		<-ctx.Done()
		for _, c := range held {
			c.Close(context.Background())
		}
		held = held[:0]
	})
}

// stormDrill runs a client with a pool of its own on url while disturb runs
// for stormFor and jobs keep arriving, then checks through admin (whose
// connections disturb spares) that the client goes on after it (a batch
// enqueued afterwards is done), that it never stopped, and that every job
// is done with its completion committed once and no job started twice
// under one lease or again after its completion.
func stormDrill(t *testing.T, url string, admin *pgxpool.Pool, disturb func(context.Context)) {
	t.Helper()
	ctx := context.Background()
	pcfg, err := PoolConfig(url)
	require.NoError(t, err)
	pcfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	cfg := testConfig(map[string]QueueConfig{"storm": {Concurrency: 4}})
	cfg.LeaseDuration = 10 * time.Second
	c := startClient(t, pool, cfg, func(c *Client) { c.Handle("logged", startLogHandler(admin)) })

	enqueue := func(n int) {
		t.Helper()
		_, err := EnqueueCopy(ctx, admin, slices.Repeat([]EnqueueParams{{Queue: "storm", Kind: "logged", Payload: map[string]int{"ms": 5}}}, n))
		require.NoError(t, err)
	}
	sctx, cancel := context.WithTimeout(ctx, stormFor)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { disturb(sctx) })
	total := 0
	tick := time.NewTicker(250 * time.Millisecond)
	for sctx.Err() == nil {
		enqueue(10)
		total += 10
		select {
		case <-sctx.Done():
		case <-tick.C:
		}
	}
	tick.Stop()
	wg.Wait()
	var during int
	require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM done_log").Scan(&during))
	t.Logf("%d of %d jobs done during the storm", during, total)

	testdb.Eventually(t, 2*time.Minute, "every job of the storm done", func() bool {
		return testdb.Count(t, admin, "SELECT count(*) FROM jobs WHERE status = 'done'") == total
	})
	enqueue(200)
	total += 200
	testdb.Eventually(t, time.Minute, "a batch enqueued after the storm done", func() bool {
		return testdb.Count(t, admin, "SELECT count(*) FROM jobs WHERE status = 'done'") == total
	})

	workers, err := WorkerList(ctx, admin, time.Minute)
	require.NoError(t, err)
	i := slices.IndexFunc(workers, func(w Worker) bool { return w.ID == c.ID() })
	require.GreaterOrEqual(t, i, 0, "the worker's row is gone")
	require.Nil(t, workers[i].StoppedAt, "the worker stopped")
	require.True(t, workers[i].Alive, "the worker stopped heartbeating")
	requireNoneReclaimed(t, admin, "the storm made a live worker look dead")

	ids := func(q string) []int64 {
		t.Helper()
		rows, err := admin.Query(ctx, q)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return got
	}
	require.Equal(t, total, testdb.Count(t, admin, "SELECT count(DISTINCT job_id) FROM done_log"), "jobs whose completion never committed")
	require.Empty(t, ids("SELECT job_id FROM done_log GROUP BY job_id HAVING count(*) > 1 ORDER BY 1"), "jobs completed twice")
	require.Empty(t, ids("SELECT job_id FROM start_log GROUP BY job_id, generation HAVING count(*) > 1 ORDER BY 1"), "jobs started twice under one lease")
	require.Empty(t, ids(`SELECT DISTINCT s.job_id FROM start_log s JOIN done_log d USING (job_id) WHERE s.at > d.at ORDER BY 1`),
		"jobs started again after their completion committed")
	t.Logf("%d jobs started twice, their first attempt cut short", testdb.Count(t, admin,
		"SELECT count(*) FROM (SELECT job_id FROM start_log GROUP BY job_id HAVING count(*) > 1) AS s"))
}
